//! What the classifier sees of a prompt: hashed word counts (L2-normalised) and a few dense
//! shape features (length, digits, arithmetic, answer options).
//!
//! One pass over the text, no allocation per word: words are lower-cased into a stack buffer,
//! hashed with XXH3 into `2^bits` buckets, and counted in a per-thread scratch table that is
//! reset by the buckets it touched.

use std::cell::RefCell;

use xxhash_rust::xxh3::xxh3_64;

/// Dense features, in the order their weights are stored.
pub const DENSE_NAMES: [&str; DENSE] = [
    "log_chars",
    "log_words",
    "digit_share",
    "log_digits",
    "lines",
    "multiple_choice",
    "log_numbers",
    "operator_share",
];
/// How many dense features there are.
pub const DENSE: usize = 8;
/// Words longer than this are hashed by their first `MAX_WORD` bytes.
const MAX_WORD: usize = 32;

/// A prompt's features: hashed buckets with their normalised weights, and the raw dense values.
#[derive(Debug, Clone, PartialEq)]
pub struct Features {
    /// (bucket, count / L2 norm of all counts), each bucket once.
    pub words: Vec<(u32, f32)>,
    /// Dense values, before standardisation.
    pub dense: [f32; DENSE],
}

struct Scratch {
    counts: Vec<u16>,
    touched: Vec<u32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = const { RefCell::new(Scratch { counts: Vec::new(), touched: Vec::new() }) };
}

/// Walks a prompt's words (runs of two or more alphanumeric characters, lower-cased) and its
/// dense features, calling `word` with each word's bucket.
fn walk(prompt: &str, bits: u32, mut word: impl FnMut(u32)) -> [f32; DENSE] {
    let mask = (1u64 << bits) - 1;
    let mut buf = [0u8; MAX_WORD];
    let (mut len, mut chars_in_word) = (0usize, 0usize);
    let (mut words, mut digits, mut numbers, mut operators, mut lines) =
        (0u32, 0u32, 0u32, 0u32, 0u32);
    let mut in_number = false;
    let mut flush = |len: &mut usize, chars_in_word: &mut usize, buf: &[u8; MAX_WORD]| {
        if *chars_in_word >= 2 {
            word((xxh3_64(&buf[..*len]) & mask) as u32);
            words += 1;
        }
        *len = 0;
        *chars_in_word = 0;
    };
    let mut chars = 0u32;
    for c in prompt.chars() {
        chars += 1;
        if c.is_alphanumeric() || c == '_' {
            if c.is_ascii_digit() {
                digits += 1;
                if !in_number {
                    numbers += 1;
                    in_number = true;
                }
            } else {
                in_number = false;
            }
            chars_in_word += 1;
            for l in c.to_lowercase() {
                let mut b = [0u8; 4];
                for &byte in l.encode_utf8(&mut b).as_bytes() {
                    if len < MAX_WORD {
                        buf[len] = byte;
                        len += 1;
                    }
                }
            }
            continue;
        }
        if c == '.' && in_number {
            // A decimal point keeps the number going.
        } else {
            in_number = false;
        }
        flush(&mut len, &mut chars_in_word, &buf);
        match c {
            '\n' => lines += 1,
            '+' | '-' | '*' | '/' | '=' | '^' | '%' | '$' => operators += 1,
            _ => {}
        }
    }
    flush(&mut len, &mut chars_in_word, &buf);
    let share = |n: u32| {
        if chars == 0 {
            0.0
        } else {
            n as f32 / chars as f32
        }
    };
    let multiple_choice = prompt.contains("\nA.") && prompt.contains("\nB.");
    [
        (chars as f32).ln_1p(),
        (words as f32).ln_1p(),
        share(digits),
        (digits as f32).ln_1p(),
        lines as f32 / 10.0,
        if multiple_choice { 1.0 } else { 0.0 },
        (numbers as f32).ln_1p(),
        share(operators) * 10.0,
    ]
}

impl Features {
    /// Extracts the features of `prompt` with `2^bits` word buckets (`bits` in 8..=24).
    pub fn extract(prompt: &str, bits: u32) -> Features {
        Self::with_counts(prompt, bits, |counts, touched, dense| {
            let norm = touched
                .iter()
                .map(|&b| f32::from(counts[b as usize]).powi(2))
                .sum::<f32>()
                .sqrt()
                .max(1.0);
            let mut words: Vec<(u32, f32)> = touched
                .iter()
                .map(|&b| (b, f32::from(counts[b as usize]) / norm))
                .collect();
            words.sort_unstable_by_key(|(b, _)| *b);
            Features { words, dense }
        })
    }

    /// Runs `f` on the bucket counts of `prompt`, the buckets touched and the dense values.
    pub(crate) fn with_counts<R>(
        prompt: &str,
        bits: u32,
        f: impl FnOnce(&[u16], &[u32], [f32; DENSE]) -> R,
    ) -> R {
        SCRATCH.with(|s| {
            let mut s = s.borrow_mut();
            let Scratch { counts, touched } = &mut *s;
            if counts.len() != 1 << bits {
                *counts = vec![0; 1 << bits];
            }
            touched.clear();
            let dense = walk(prompt, bits, |b| {
                let c = &mut counts[b as usize];
                if *c == 0 {
                    touched.push(b);
                }
                *c = c.saturating_add(1);
            });
            let out = f(counts, touched, dense);
            for &b in touched.iter() {
                counts[b as usize] = 0;
            }
            out
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_case_folded_counted_and_normalised() {
        let f = Features::extract("The cat and THE dog", 16);
        // the ×2, cat, and, dog: four buckets (barring a collision), norm sqrt(4+1+1+1).
        assert_eq!(f.words.len(), 4);
        let norm = 7f32.sqrt();
        let top = f.words.iter().map(|(_, v)| *v).fold(0.0, f32::max);
        assert!((top - 2.0 / norm).abs() < 1e-6);
        let total: f32 = f.words.iter().map(|(_, v)| v * v).sum();
        assert!((total - 1.0).abs() < 1e-5);
    }

    #[test]
    fn single_letters_are_not_words_but_count_as_characters() {
        let f = Features::extract("a b c", 16);
        assert!(f.words.is_empty());
        assert!((f.dense[0] - 5f32.ln_1p()).abs() < 1e-6);
    }

    #[test]
    fn dense_features_see_numbers_operators_and_choices() {
        let f = Features::extract("What is 12.5 * 4 + 3?\nA. 53\nB. 50", 16);
        assert_eq!(f.dense[5], 1.0, "multiple choice");
        assert!(
            (f.dense[6] - 5f32.ln_1p()).abs() < 1e-6,
            "numbers: 12.5, 4, 3, 53, 50"
        );
        assert!(f.dense[7] > 0.0);
        assert_eq!(f.dense[4], 0.2, "two line breaks");
    }

    #[test]
    fn empty_and_non_latin_prompts_work() {
        assert!(Features::extract("", 10).words.is_empty());
        let f = Features::extract("Привет мир 你好", 10);
        assert_eq!(f.words.len(), 3);
    }

    #[test]
    fn extraction_is_deterministic_and_scratch_is_reset() {
        let a = Features::extract("repeat repeat once", 12);
        let _ = Features::extract("something else entirely", 12);
        assert_eq!(a, Features::extract("repeat repeat once", 12));
    }
}
