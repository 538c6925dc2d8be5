//! What the classifier sees of a prompt: hashed word counts (L2-normalised) and dense features
//! meant to carry across kinds of prompts: shape (length, digits, arithmetic, answer options,
//! sentences, questions, code characters, word length, vocabulary variety) and counts of cue
//! words by what they ask for (code, mathematics, writing, explanation, constraints, roles,
//! extraction).
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
    "mean_word_length",
    "distinct_word_share",
    "log_questions",
    "log_sentences",
    "code_char_share",
    "cue_code",
    "cue_math",
    "cue_writing",
    "cue_explain",
    "cue_constraint",
    "cue_role",
    "cue_extract",
];
/// How many dense features there are.
pub const DENSE: usize = 20;
/// The version of the feature extraction: a model is only valid with the extractor it was
/// trained with, and a model file records it.
pub const FEATURES_VERSION: u32 = 3;

/// The kinds of work a prompt's cue words can name, as [`task_kind`] reports them: `general`
/// when no cue word names one.
pub const TASK_KINDS: [&str; 6] = ["general", "code", "math", "writing", "explain", "extract"];
/// The index of `math` in [`TASK_KINDS`]: arithmetic and word problems.
pub const MATH_KIND: usize = 2;

/// The kind of work a prompt asks for (an index into [`TASK_KINDS`]): the kind whose cue words
/// it uses most (the first on a tie), from its raw dense features. Constraint and role words
/// say how to work, not what, so they name no kind.
///
/// ```
/// use laneway::classifier::{task_kind, Features, TASK_KINDS};
/// let kind = |p: &str| TASK_KINDS[task_kind(&Features::extract(p, 10).dense)];
/// assert_eq!(kind("Extract the dates from this email and list them."), "extract");
/// assert_eq!(kind("Fix the bug in this Python function."), "code");
/// assert_eq!(kind("Hello there"), "general");
/// ```
pub fn task_kind(dense: &[f32; DENSE]) -> usize {
    let cue = |c: Cue| dense[FIRST_CUE + c as usize];
    [
        Cue::Code,
        Cue::Math,
        Cue::Writing,
        Cue::Explain,
        Cue::Extract,
    ]
    .iter()
    .enumerate()
    .fold((0, 0.0), |(best, most), (k, c)| {
        if cue(*c) > most {
            (k + 1, cue(*c))
        } else {
            (best, most)
        }
    })
    .0
}

/// The dense index of the first cue-word count, in [`Cue`] order.
const FIRST_CUE: usize = 13;
/// The dense index of the distinct-word share, filled in once the buckets are counted.
const DISTINCT: usize = 9;

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
    /// `?` or `!`: ends a sentence.
    Terminal,
    /// `{ } ; < > \``: more common in code than in prose.
    Code,
    Space,
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
            b'?' | b'!' => Class::Terminal,
            b'{' | b'}' | b';' | b'<' | b'>' | b'`' => Class::Code,
            b' ' | b'\t' | b'\r' => Class::Space,
            b'+' | b'-' | b'*' | b'/' | b'=' | b'^' | b'%' | b'$' => Class::Operator,
            _ => Class::Other,
        };
        b += 1;
    }
    t
};

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a of a lower-case ASCII word, at compile time (the cue table's keys).
const fn fnv(word: &[u8]) -> u64 {
    let mut h = FNV_OFFSET;
    let mut i = 0;
    while i < word.len() {
        h = (h ^ word[i] as u64).wrapping_mul(FNV_PRIME);
        i += 1;
    }
    h
}

/// What a cue word says the prompt asks for. Counted per kind, these generalise across
/// sources where individual words do not: a new prompt set shares few words with the
/// training data but asks for the same kinds of work.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
enum Cue {
    Code,
    Math,
    Writing,
    Explain,
    Constraint,
    Role,
    Extract,
}

const CUE_WORDS: &[(&str, Cue)] = &[
    ("code", Cue::Code),
    ("program", Cue::Code),
    ("function", Cue::Code),
    ("implement", Cue::Code),
    ("algorithm", Cue::Code),
    ("python", Cue::Code),
    ("java", Cue::Code),
    ("javascript", Cue::Code),
    ("sql", Cue::Code),
    ("def", Cue::Code),
    ("return", Cue::Code),
    ("class", Cue::Code),
    ("import", Cue::Code),
    ("const", Cue::Code),
    ("int", Cue::Code),
    ("array", Cue::Code),
    ("string", Cue::Code),
    ("bug", Cue::Code),
    ("debug", Cue::Code),
    ("solve", Cue::Math),
    ("compute", Cue::Math),
    ("calculate", Cue::Math),
    ("prove", Cue::Math),
    ("proof", Cue::Math),
    ("equation", Cue::Math),
    ("integral", Cue::Math),
    ("derivative", Cue::Math),
    ("probability", Cue::Math),
    ("matrix", Cue::Math),
    ("frac", Cue::Math),
    ("sqrt", Cue::Math),
    ("sum", Cue::Math),
    ("total", Cue::Math),
    ("many", Cue::Math),
    ("much", Cue::Math),
    ("percent", Cue::Math),
    ("write", Cue::Writing),
    ("compose", Cue::Writing),
    ("draft", Cue::Writing),
    ("story", Cue::Writing),
    ("poem", Cue::Writing),
    ("essay", Cue::Writing),
    ("email", Cue::Writing),
    ("letter", Cue::Writing),
    ("blog", Cue::Writing),
    ("rewrite", Cue::Writing),
    ("paraphrase", Cue::Writing),
    ("creative", Cue::Writing),
    ("why", Cue::Explain),
    ("explain", Cue::Explain),
    ("describe", Cue::Explain),
    ("discuss", Cue::Explain),
    ("analyze", Cue::Explain),
    ("analyse", Cue::Explain),
    ("compare", Cue::Explain),
    ("evaluate", Cue::Explain),
    ("justify", Cue::Explain),
    ("reason", Cue::Explain),
    ("must", Cue::Constraint),
    ("should", Cue::Constraint),
    ("exactly", Cue::Constraint),
    ("least", Cue::Constraint),
    ("most", Cue::Constraint),
    ("fewer", Cue::Constraint),
    ("without", Cue::Constraint),
    ("only", Cue::Constraint),
    ("each", Cue::Constraint),
    ("every", Cue::Constraint),
    ("ensure", Cue::Constraint),
    ("format", Cue::Constraint),
    ("json", Cue::Constraint),
    ("bullet", Cue::Constraint),
    ("words", Cue::Constraint),
    ("sentences", Cue::Constraint),
    ("paragraph", Cue::Constraint),
    ("paragraphs", Cue::Constraint),
    ("step", Cue::Constraint),
    ("limit", Cue::Constraint),
    ("pretend", Cue::Role),
    ("imagine", Cue::Role),
    ("act", Cue::Role),
    ("role", Cue::Role),
    ("persona", Cue::Role),
    ("character", Cue::Role),
    ("extract", Cue::Extract),
    ("summarize", Cue::Extract),
    ("summarise", Cue::Extract),
    ("summary", Cue::Extract),
    ("list", Cue::Extract),
    ("identify", Cue::Extract),
    ("classify", Cue::Extract),
    ("translate", Cue::Extract),
];

const CUE_SLOTS: usize = 512;

/// The cue words by hash, open-addressed by the hash's low bits: a word costs one or two
/// probes. (Slot value 0 is empty; a cue is stored as its kind + 1.)
const CUE_TABLE: [(u64, u8); CUE_SLOTS] = {
    let mut t = [(0u64, 0u8); CUE_SLOTS];
    let mut i = 0;
    while i < CUE_WORDS.len() {
        let h = fnv(CUE_WORDS[i].0.as_bytes());
        let mut slot = (h as usize) & (CUE_SLOTS - 1);
        while t[slot].1 != 0 {
            slot = (slot + 1) & (CUE_SLOTS - 1);
        }
        t[slot] = (h, CUE_WORDS[i].1 as u8 + 1);
        i += 1;
    }
    t
};

/// The cue kind of a word, by its FNV-1a hash.
fn cue_of(hash: u64) -> Option<usize> {
    let mut slot = (hash as usize) & (CUE_SLOTS - 1);
    loop {
        let (h, kind) = CUE_TABLE[slot];
        if kind == 0 {
            return None;
        }
        if h == hash {
            return Some(usize::from(kind - 1));
        }
        slot = (slot + 1) & (CUE_SLOTS - 1);
    }
}

const CUES: usize = 7;

/// The bucket of a word's FNV-1a hash, mixed so that its low bits depend on every byte.
fn bucket(hash: u64, mask: u64) -> u32 {
    let h = (hash ^ (hash >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    ((h ^ (h >> 32)) & mask) as u32
}

/// What one scan counts.
#[derive(Default, Clone, Copy)]
struct Counts {
    chars: u32,
    words: u32,
    /// Characters inside counted words.
    word_chars: u32,
    digits: u32,
    numbers: u32,
    operators: u32,
    lines: u32,
    questions: u32,
    sentences: u32,
    code_chars: u32,
    cues: [u32; CUES],
}

impl Counts {
    fn add(self, o: Counts) -> Counts {
        Counts {
            chars: self.chars + o.chars,
            words: self.words + o.words,
            word_chars: self.word_chars + o.word_chars,
            digits: self.digits + o.digits,
            numbers: self.numbers + o.numbers,
            operators: self.operators + o.operators,
            lines: self.lines + o.lines,
            questions: self.questions + o.questions,
            sentences: self.sentences + o.sentences,
            code_chars: self.code_chars + o.code_chars,
            cues: std::array::from_fn(|k| self.cues[k] + o.cues[k]),
        }
    }
}

/// Walks a prompt's words (runs of two or more alphanumeric characters or `_`, lower-cased),
/// calling `word` with each word's bucket, and counts what the dense features need.
///
/// One pass, hashing as it goes (FNV-1a over the lower-cased UTF-8): ASCII bytes are
/// classified by table; other characters are decoded and folded with Unicode rules.
fn scan(prompt: &str, mask: u64, word: &mut impl FnMut(u32)) -> Counts {
    let bytes = prompt.as_bytes();
    let mut hash = FNV_OFFSET;
    let mut chars_in_word = 0u32;
    let mut n = Counts::default();
    let mut in_number = false;
    // A sentence ends at `.`, `?` or `!` followed by white space or the end.
    let mut after_terminal = false;
    let mut end_word = |hash: u64, chars_in_word: u32, n: &mut Counts| {
        if chars_in_word >= 2 {
            word(bucket(hash, mask));
            n.words += 1;
            n.word_chars += chars_in_word;
            if let Some(cue) = cue_of(hash) {
                n.cues[cue] += 1;
            }
        }
    };
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        n.chars += 1;
        let class = if b < 0x80 {
            CLASSES[b as usize]
        } else {
            let c = prompt[i..].chars().next().expect("i is on a char boundary");
            i += c.len_utf8();
            after_terminal = false;
            in_number = false;
            if c.is_alphanumeric() {
                chars_in_word += 1;
                for l in c.to_lowercase() {
                    let mut enc = [0u8; 4];
                    for &byte in l.encode_utf8(&mut enc).as_bytes() {
                        hash = (hash ^ u64::from(byte)).wrapping_mul(FNV_PRIME);
                    }
                }
                continue;
            }
            end_word(hash, chars_in_word, &mut n);
            hash = FNV_OFFSET;
            chars_in_word = 0;
            continue;
        };
        i += 1;
        // Most bytes are letters: a branch the CPU predicts, before the jump table of `match`.
        if class == Class::Letter {
            after_terminal = false;
            in_number = false;
            chars_in_word += 1;
            hash = (hash ^ u64::from(b.to_ascii_lowercase())).wrapping_mul(FNV_PRIME);
            continue;
        }
        if after_terminal && matches!(class, Class::Space | Class::Newline) {
            n.sentences += 1;
        }
        after_terminal = false;
        match class {
            Class::Letter | Class::Digit => {
                if class == Class::Digit {
                    n.digits += 1;
                    n.numbers += u32::from(!in_number);
                    in_number = true;
                } else {
                    in_number = false;
                }
                chars_in_word += 1;
                hash = (hash ^ u64::from(b.to_ascii_lowercase())).wrapping_mul(FNV_PRIME);
                continue;
            }
            // A decimal point keeps a number going.
            Class::Point => after_terminal = true,
            Class::Terminal => {
                after_terminal = true;
                n.questions += u32::from(b == b'?');
                in_number = false;
            }
            Class::Newline => {
                n.lines += 1;
                in_number = false;
            }
            Class::Operator => {
                n.operators += 1;
                in_number = false;
            }
            Class::Code => {
                n.code_chars += 1;
                in_number = false;
            }
            Class::Space | Class::Other => in_number = false,
        }
        end_word(hash, chars_in_word, &mut n);
        hash = FNV_OFFSET;
        chars_in_word = 0;
    }
    end_word(hash, chars_in_word, &mut n);
    n.sentences += u32::from(after_terminal);
    n
}

/// The dense features from a scan's counts, the text scanned, and the whole prompt's length
/// in characters. The distinct-word share is left at 0 for the caller, who knows the buckets.
fn dense(scanned: &str, n: Counts, total_chars: u32) -> [f32; DENSE] {
    let share = |k: u32| {
        if n.chars == 0 {
            0.0
        } else {
            k as f32 / n.chars as f32
        }
    };
    let multiple_choice = scanned.contains("\nA.") && scanned.contains("\nB.");
    let mean_word = if n.words == 0 {
        0.0
    } else {
        n.word_chars as f32 / n.words as f32
    };
    let mut out = [
        (total_chars as f32).ln_1p(),
        (n.words as f32).ln_1p(),
        share(n.digits),
        (n.digits as f32).ln_1p(),
        n.lines as f32 / 10.0,
        if multiple_choice { 1.0 } else { 0.0 },
        (n.numbers as f32).ln_1p(),
        share(n.operators) * 10.0,
        mean_word,
        0.0,
        (n.questions as f32).ln_1p(),
        (n.sentences as f32).ln_1p(),
        share(n.code_chars) * 10.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ];
    for (k, c) in n.cues.iter().enumerate() {
        out[FIRST_CUE + k] = (*c as f32).ln_1p();
    }
    out
}

/// Prompts longer than twice this many bytes are read at their start and their end only.
const WINDOW: usize = 2048;

/// The parts of a prompt the classifier reads: all of it, or of a prompt over twice
/// [`WINDOW`] bytes its first and last [`WINDOW`] bytes (cut at character boundaries).
pub(crate) fn windows(prompt: &str) -> (&str, Option<&str>) {
    if prompt.len() <= 2 * WINDOW {
        return (prompt, None);
    }
    let head = &prompt[..prompt.floor_char_boundary(WINDOW)];
    let tail = &prompt[prompt.ceil_char_boundary(prompt.len() - WINDOW)..];
    (head, Some(tail))
}

/// Walks a prompt's words and dense features, calling `word` with each word's bucket; returns
/// the dense features and the number of words walked.
///
/// A long prompt is read only in its first and last [`WINDOW`] bytes (where instructions and
/// the question usually sit; the middle is pasted context), so scoring costs the same for any
/// length. Its length feature still counts every character.
fn walk(prompt: &str, bits: u32, mut word: impl FnMut(u32)) -> ([f32; DENSE], u32) {
    let mask = (1u64 << bits) - 1;
    let (head, Some(tail)) = windows(prompt) else {
        let n = scan(prompt, mask, &mut word);
        return (dense(prompt, n, n.chars), n.words);
    };
    let n = scan(head, mask, &mut word).add(scan(tail, mask, &mut word));
    let total_chars = prompt.chars().count() as u32;
    // Answer options, if any, come at the end.
    (dense(tail, n, total_chars), n.words)
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
            let (mut dense, words) = walk(prompt, bits, |b| {
                let c = &mut counts[b as usize];
                if *c == 0 {
                    touched.push(b);
                }
                *c = c.saturating_add(1);
            });
            // Distinct buckets stand in for distinct words (collisions are rare at 2^15).
            dense[DISTINCT] = if words == 0 {
                0.0
            } else {
                touched.len() as f32 / words as f32
            };
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
    fn the_math_kind_is_named_math() {
        assert_eq!(TASK_KINDS[MATH_KIND], "math");
    }

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
    fn cue_words_sentences_questions_and_code_are_counted() {
        let f = Features::extract(
            "Write a Python function. It must return a list! Why? Explain {x; y}",
            16,
        );
        let cue = |c: Cue| f.dense[FIRST_CUE + c as usize];
        assert_eq!(cue(Cue::Code), 3f32.ln_1p(), "python, function, return");
        assert_eq!(cue(Cue::Writing), 1f32.ln_1p());
        assert_eq!(cue(Cue::Constraint), 1f32.ln_1p(), "must");
        assert_eq!(cue(Cue::Extract), 1f32.ln_1p(), "list");
        assert_eq!(cue(Cue::Explain), 2f32.ln_1p(), "why, explain");
        assert_eq!(cue(Cue::Math), 0.0);
        assert_eq!(f.dense[10], 1f32.ln_1p(), "one question mark");
        assert_eq!(
            f.dense[11],
            3f32.ln_1p(),
            "three sentence ends before a space"
        );
        assert!(f.dense[12] > 0.0, "code characters");
        assert!(f.dense[DISTINCT] > 0.9 && f.dense[DISTINCT] <= 1.0);
        // Every cue word is found by its own hash, and no other word is.
        for (w, c) in CUE_WORDS {
            assert_eq!(cue_of(fnv(w.as_bytes())), Some(*c as usize), "{w}");
        }
        assert_eq!(cue_of(fnv(b"banana")), None);
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
