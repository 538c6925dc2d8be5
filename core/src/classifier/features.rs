//! What the classifier sees of a prompt: hashed word counts (L2-normalised) and a few dense
//! shape features (length, digits, arithmetic, answer options).
//!
//! One pass over the text, no allocation per word: each word's lower-cased bytes are hashed
//! (FNV-1a) as they are read, into `2^bits` buckets counted in a per-thread scratch table that
//! is reset by the buckets it touched.

use std::cell::RefCell;

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
/// The version of the feature extraction: a model is only valid with the extractor it was
/// trained with, and a model file records it.
pub const FEATURES_VERSION: u32 = 2;

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

/// What an ASCII byte is to the tokenizer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Letter,
    Digit,
    Newline,
    Operator,
    Point,
    Other,
}

const CLASSES: [Class; 128] = {
    let mut t = [Class::Other; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        t[b] = match c {
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => Class::Letter,
            b'0'..=b'9' => Class::Digit,
            b'\n' => Class::Newline,
            b'.' => Class::Point,
            b'+' | b'-' | b'*' | b'/' | b'=' | b'^' | b'%' | b'$' => Class::Operator,
            _ => Class::Other,
        };
        b += 1;
    }
    t
};

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The bucket of a word's FNV-1a hash, mixed so that its low bits depend on every byte.
fn bucket(hash: u64, mask: u64) -> u32 {
    let h = (hash ^ (hash >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    ((h ^ (h >> 32)) & mask) as u32
}

/// Walks a prompt's words (runs of two or more alphanumeric characters or `_`, lower-cased)
/// and its dense features, calling `word` with each word's bucket.
///
/// One pass, hashing as it goes (FNV-1a over the lower-cased UTF-8): ASCII bytes are
/// classified by table; other characters are decoded and folded with Unicode rules.
fn scan(prompt: &str, mask: u64, word: &mut impl FnMut(u32)) -> [u32; 6] {
    let bytes = prompt.as_bytes();
    let mut hash = FNV_OFFSET;
    let mut chars_in_word = 0u32;
    let (mut chars, mut words, mut digits, mut numbers, mut operators, mut lines) =
        (0u32, 0u32, 0u32, 0u32, 0u32, 0u32);
    let mut in_number = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        chars += 1;
        let class = if b < 0x80 {
            CLASSES[b as usize]
        } else {
            let c = prompt[i..].chars().next().expect("i is on a char boundary");
            i += c.len_utf8();
            if c.is_alphanumeric() {
                in_number = false;
                chars_in_word += 1;
                for l in c.to_lowercase() {
                    let mut enc = [0u8; 4];
                    for &byte in l.encode_utf8(&mut enc).as_bytes() {
                        hash = (hash ^ u64::from(byte)).wrapping_mul(FNV_PRIME);
                    }
                }
                continue;
            }
            in_number = false;
            if chars_in_word >= 2 {
                word(bucket(hash, mask));
                words += 1;
            }
            hash = FNV_OFFSET;
            chars_in_word = 0;
            continue;
        };
        i += 1;
        match class {
            Class::Letter | Class::Digit => {
                if class == Class::Digit {
                    digits += 1;
                    numbers += u32::from(!in_number);
                    in_number = true;
                } else {
                    in_number = false;
                }
                chars_in_word += 1;
                hash = (hash ^ u64::from(b.to_ascii_lowercase())).wrapping_mul(FNV_PRIME);
                continue;
            }
            // A decimal point keeps a number going.
            Class::Point => {}
            Class::Newline => {
                lines += 1;
                in_number = false;
            }
            Class::Operator => {
                operators += 1;
                in_number = false;
            }
            Class::Other => in_number = false,
        }
        if chars_in_word >= 2 {
            word(bucket(hash, mask));
            words += 1;
        }
        hash = FNV_OFFSET;
        chars_in_word = 0;
    }
    if chars_in_word >= 2 {
        word(bucket(hash, mask));
        words += 1;
    }
    [chars, words, digits, numbers, operators, lines]
}

/// The dense features from the counts of a scan (characters, words, digits, numbers,
/// operators, line breaks), the text scanned, and the whole prompt's length in characters.
fn dense(
    scanned: &str,
    [chars, words, digits, numbers, operators, lines]: [u32; 6],
    total_chars: u32,
) -> [f32; DENSE] {
    let share = |n: u32| {
        if chars == 0 {
            0.0
        } else {
            n as f32 / chars as f32
        }
    };
    let multiple_choice = scanned.contains("\nA.") && scanned.contains("\nB.");
    [
        (total_chars as f32).ln_1p(),
        (words as f32).ln_1p(),
        share(digits),
        (digits as f32).ln_1p(),
        lines as f32 / 10.0,
        if multiple_choice { 1.0 } else { 0.0 },
        (numbers as f32).ln_1p(),
        share(operators) * 10.0,
    ]
}

/// Prompts longer than twice this many bytes are read at their start and their end only.
const WINDOW: usize = 2048;

/// Walks a prompt's words and dense features, calling `word` with each word's bucket.
///
/// A long prompt is read only in its first and last [`WINDOW`] bytes (where instructions and
/// the question usually sit; the middle is pasted context), so scoring costs the same for any
/// length. Its length feature still counts every character.
fn walk(prompt: &str, bits: u32, mut word: impl FnMut(u32)) -> [f32; DENSE] {
    let mask = (1u64 << bits) - 1;
    if prompt.len() <= 2 * WINDOW {
        let counts = scan(prompt, mask, &mut word);
        return dense(prompt, counts, counts[0]);
    }
    let head = &prompt[..prompt.floor_char_boundary(WINDOW)];
    let tail = &prompt[prompt.ceil_char_boundary(prompt.len() - WINDOW)..];
    let (a, b) = (scan(head, mask, &mut word), scan(tail, mask, &mut word));
    let counts = std::array::from_fn(|k| a[k] + b[k]);
    let total_chars = prompt.chars().count() as u32;
    // Answer options, if any, come at the end.
    dense(tail, counts, total_chars)
}

/// The L2 norm of the touched buckets' counts (at least 1, so that an empty prompt divides by 1).
pub(crate) fn l2_norm(counts: &[u16], touched: &[u32]) -> f32 {
    touched
        .iter()
        .map(|&b| f32::from(counts[b as usize]).powi(2))
        .sum::<f32>()
        .sqrt()
        .max(1.0)
}

impl Features {
    /// Extracts the features of `prompt` with `2^bits` word buckets (`bits` in 8..=24).
    pub fn extract(prompt: &str, bits: u32) -> Features {
        Self::with_counts(prompt, bits, |counts, touched, dense| {
            let norm = l2_norm(counts, touched);
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
    fn long_prompts_are_read_at_both_ends_with_their_full_length() {
        let middle = "filler words in the middle ".repeat(1000);
        let long = format!("Context starts here.\n{middle}\nQuestion: what is 2+2?");
        let f = Features::extract(&long, 16);
        assert!((f.dense[0] - (long.chars().count() as f32).ln_1p()).abs() < 1e-6);
        let short = Features::extract("Context starts here. Question: what is 2+2?", 16);
        for (b, _) in &short.words {
            assert!(f.words.iter().any(|(x, _)| x == b), "both ends are read");
        }
        // Everything beyond the two windows is skipped: the word count stays bounded.
        assert!(f.dense[1] < ((2 * WINDOW) as f32).ln_1p());
    }

    #[test]
    fn extraction_is_deterministic_and_scratch_is_reset() {
        let a = Features::extract("repeat repeat once", 12);
        let _ = Features::extract("something else entirely", 12);
        assert_eq!(a, Features::extract("repeat repeat once", 12));
    }
}
