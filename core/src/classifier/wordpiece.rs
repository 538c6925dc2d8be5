//! BERT's WordPiece tokenizer over a shipped vocabulary, as Hugging Face `tokenizers` runs it
//! for `bert-base-uncased`-style models (the `tokenizer.json` of all-MiniLM-L6-v2):
//!
//! 1. the added tokens `[PAD] [UNK] [CLS] [SEP] [MASK]` are matched in the raw text;
//! 2. `BertNormalizer`: control and format characters, NUL and U+FFFD are dropped, white
//!    space becomes a space, CJK ideographs are set apart, accents are stripped (NFD, then
//!    every non-spacing mark removed) and the text lower-cased;
//! 3. `BertPreTokenizer`: split at white space, and each punctuation character is a word;
//! 4. `WordPiece`: greedy longest match with `##` continuations; a word that cannot be split
//!    whole, or of more than 100 characters, is one `[UNK]`.
//!
//! ASCII text takes a table-driven path that does all four in one pass; other characters go
//! through the Unicode rules. The test `matches_the_reference_tokenizer` checks the ids against
//! `tokenizers` 0.23.3 on 300 strings of many scripts (`scripts/distill/tokenizer_sample.jsonl`).
//!
//! ```
//! use laneway::classifier::WordPiece;
//! let vocab = "[PAD]\n[UNK]\nhello\n,\nworld\n##s\n";
//! let t = WordPiece::from_vocab(vocab, "[UNK]").unwrap();
//! assert_eq!(t.ids("Hello, WORLDS"), vec![2, 3, 4, 5]);
//! ```

use unicode_normalization::char::decompose_canonical;
use unicode_properties::{GeneralCategory, GeneralCategoryGroup, UnicodeGeneralCategory};

/// The hash of a token's bytes in the lookup tables (foldhash with a fixed seed: the tables
/// are built and read in one process).
fn token_hash(bytes: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0x006c_616e_6577_6179).hash_one(bytes)
}

/// Words of more characters than this are a single `[UNK]`, as in BERT.
const MAX_WORD_CHARS: usize = 100;

/// The added (special) tokens BERT's tokenizer matches before normalisation.
const SPECIALS: [&str; 5] = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];

/// A WordPiece vocabulary and the tokenizer over it.
#[derive(Clone)]
pub struct WordPiece {
    /// Token ids of whole-word tokens, by their bytes.
    starts: Lookup,
    /// Token ids of `##` continuations, by their bytes without the `##`.
    continuations: Lookup,
    /// The longest token's length in bytes (continuations without `##`).
    longest: usize,
    unk: u32,
    vocab_size: usize,
    /// Each added token's id, where the vocabulary has it.
    specials: [Option<u32>; SPECIALS.len()],
}

impl std::fmt::Debug for WordPiece {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WordPiece")
            .field("tokens", &(self.starts.len + self.continuations.len))
            .field("unk", &self.unk)
            .finish_non_exhaustive()
    }
}

/// An open-addressed table from token bytes to ids ([`token_hash`], linear probing). A
/// slot holds the hash's high half and the id; the token's bytes, compared on a match, sit
/// by id. Slots are 8 bytes so that the table (512 KB for 30,000 tokens) stays in cache:
/// each miss costs more than the hashing.
#[derive(Clone)]
struct Lookup {
    /// (hash >> 32, id + 1) per slot; id 0 is empty.
    slots: Vec<(u32, u32)>,
    /// Where each id's bytes are in `bytes`: start << 8 | length (0 for ids not in the table).
    spans: Vec<u32>,
    /// Every token's bytes.
    bytes: Vec<u8>,
    len: usize,
}

impl Lookup {
    fn new(tokens: &[(&[u8], u32)]) -> Lookup {
        let capacity = (tokens.len() * 2).next_power_of_two().max(16);
        let ids = tokens.iter().map(|t| t.1 as usize + 1).max().unwrap_or(0);
        let mut out = Lookup {
            slots: vec![(0, 0); capacity],
            spans: vec![0; ids],
            bytes: Vec::new(),
            len: tokens.len(),
        };
        let mask = capacity - 1;
        for &(token, id) in tokens {
            out.spans[id as usize] = (out.bytes.len() as u32) << 8 | token.len() as u32;
            out.bytes.extend_from_slice(token);
            let h = token_hash(token);
            let mut slot = h as usize & mask;
            while out.slots[slot].1 != 0 {
                slot = (slot + 1) & mask;
            }
            out.slots[slot] = ((h >> 32) as u32, id + 1);
        }
        out
    }

    fn get(&self, token: &[u8]) -> Option<u32> {
        let h = token_hash(token);
        let tag = (h >> 32) as u32;
        let mask = self.slots.len() - 1;
        let mut slot = h as usize & mask;
        loop {
            let (t, id) = self.slots[slot];
            if id == 0 {
                return None;
            }
            if t == tag {
                let at = self.spans[id as usize - 1];
                let (start, len) = ((at >> 8) as usize, (at & 0xff) as usize);
                // Tokens are a few bytes: a loop the compiler inlines beats a call to memcmp.
                if len == token.len()
                    && self.bytes[start..start + len]
                        .iter()
                        .zip(token)
                        .all(|(a, b)| a == b)
                {
                    return Some(id - 1);
                }
            }
            slot = (slot + 1) & mask;
        }
    }
}

/// What the ASCII path does with a byte (after lower-casing letters).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ascii {
    /// Part of a word.
    Word,
    /// Ends the word.
    Space,
    /// A word of its own.
    Punct,
    /// Dropped by the normaliser (a control character).
    Drop,
}

const ASCII: [Ascii; 128] = {
    let mut t = [Ascii::Word; 128];
    let mut b = 0;
    while b < 128 {
        t[b] = match b as u8 {
            // Vertical tab and form feed are control characters to BERT: dropped.
            b'\t' | b'\n' | b'\r' | b' ' => Ascii::Space,
            0x00..=0x1f | 0x7f => Ascii::Drop,
            33..=47 | 58..=64 | 91..=96 | 123..=126 => Ascii::Punct,
            _ => Ascii::Word,
        };
        b += 1;
    }
    t
};

/// The error of a vocabulary that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("WordPiece vocabulary: {0}")]
pub struct VocabError(String);

impl WordPiece {
    /// A tokenizer over a BERT `vocab.txt` (one token per line, line n is id n − 1), with
    /// `unk` the token of words that cannot be split.
    pub fn from_vocab(vocab: &str, unk: &str) -> Result<WordPiece, VocabError> {
        let tokens: Vec<&str> = vocab.lines().collect();
        let mut starts = Vec::new();
        let mut continuations = Vec::new();
        let mut specials = [None; SPECIALS.len()];
        let mut unk_id = None;
        let mut longest = 0;
        for (id, token) in tokens.iter().enumerate() {
            let id = u32::try_from(id).map_err(|_| VocabError("too many tokens".into()))?;
            if token.is_empty() || token.len() > 255 {
                return Err(VocabError(format!(
                    "line {} is empty or longer than 255 bytes",
                    id + 1
                )));
            }
            if *token == unk {
                unk_id = Some(id);
            }
            if let Some(k) = SPECIALS.iter().position(|s| s == token) {
                specials[k] = Some(id);
            }
            match token.strip_prefix("##").filter(|rest| !rest.is_empty()) {
                Some(rest) => {
                    longest = longest.max(rest.len());
                    continuations.push((rest.as_bytes(), id));
                }
                None => {
                    longest = longest.max(token.len());
                    starts.push((token.as_bytes(), id));
                }
            }
        }
        let unk = unk_id.ok_or_else(|| VocabError(format!("it has no {unk:?} token")))?;
        if vocab.len() >= 1 << 24 {
            return Err(VocabError("it is over 16 MB".into()));
        }
        Ok(WordPiece {
            starts: Lookup::new(&starts),
            continuations: Lookup::new(&continuations),
            longest,
            unk,
            vocab_size: tokens.len(),
            specials,
        })
    }

    /// How many tokens the vocabulary has (ids are `0..vocab_size`).
    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// The ids of `text`, without the `[CLS]` / `[SEP]` template, untruncated.
    pub fn ids(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        self.for_each_id(text, |id| out.push(id));
        out
    }

    /// Calls `f` with each id of `text` in order (the allocation-free form of [`WordPiece::ids`]).
    pub fn for_each_id(&self, text: &str, mut f: impl FnMut(u32)) {
        let mut word = Word::default();
        let mut rest = text;
        while !rest.is_empty() {
            let (before, special) = self.next_special(rest);
            self.normalised_words(&rest[..before], &mut word, &mut f);
            self.end_word(&mut word, &mut f);
            match special {
                Some((id, len)) => {
                    f(id);
                    rest = &rest[before + len..];
                }
                None => break,
            }
        }
    }

    /// Where the next added token starts in `text` and its id and length, if one does.
    fn next_special(&self, text: &str) -> (usize, Option<(u32, usize)>) {
        let bytes = text.as_bytes();
        let mut from = 0;
        while let Some(at) = bytes[from..].iter().position(|&b| b == b'[') {
            let at = from + at;
            for (k, s) in SPECIALS.iter().enumerate() {
                if let Some(id) = self.specials[k].filter(|_| bytes[at..].starts_with(s.as_bytes()))
                {
                    return (at, Some((id, s.len())));
                }
            }
            from = at + 1;
        }
        (text.len(), None)
    }

    /// Normalises and pre-tokenises `text` (no added tokens in it), emitting each finished
    /// word's ids.
    fn normalised_words(&self, text: &str, word: &mut Word, f: &mut impl FnMut(u32)) {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            if b < 0x80 {
                i += 1;
                let class = ASCII[b as usize];
                // Most bytes are part of a word: a predicted branch, before the jump table.
                if class == Ascii::Word {
                    word.push_ascii(b.to_ascii_lowercase());
                    continue;
                }
                match class {
                    Ascii::Word => word.push_ascii(b.to_ascii_lowercase()),
                    Ascii::Space => self.end_word(word, f),
                    Ascii::Punct => {
                        self.end_word(word, f);
                        word.push_ascii(b);
                        self.end_word(word, f);
                    }
                    Ascii::Drop => {}
                }
                continue;
            }
            let c = text[i..].chars().next().expect("i is on a char boundary");
            i += c.len_utf8();
            self.unicode_char(c, word, f);
        }
    }

    /// One non-ASCII character through the normaliser and pre-tokeniser.
    fn unicode_char(&self, c: char, word: &mut Word, f: &mut impl FnMut(u32)) {
        // The normaliser drops before it maps white space: U+0085 is both, and goes.
        if c == '\u{fffd}' || is_other(c) {
            return;
        }
        if c.is_whitespace() {
            return self.end_word(word, f);
        }
        if is_cjk(c) {
            self.end_word(word, f);
            word.push_char(c);
            return self.end_word(word, f);
        }
        decompose_canonical(c, |d| {
            if d.general_category() == GeneralCategory::NonspacingMark {
                return;
            }
            for l in d.to_lowercase() {
                if is_punctuation(l) {
                    self.end_word(word, f);
                    word.push_char(l);
                    self.end_word(word, f);
                } else if l.is_whitespace() {
                    self.end_word(word, f);
                } else {
                    word.push_char(l);
                }
            }
        });
    }

    /// Emits the ids of the word gathered so far and starts a new one.
    fn end_word(&self, word: &mut Word, f: &mut impl FnMut(u32)) {
        if word.bytes.is_empty() {
            return;
        }
        if word.chars > MAX_WORD_CHARS {
            f(self.unk);
        } else {
            self.pieces(&word.bytes, f);
        }
        word.bytes.clear();
        word.chars = 0;
    }

    /// The greedy longest-match split of one word; `[UNK]` for the whole word if any part
    /// has no token.
    fn pieces(&self, word: &[u8], f: &mut impl FnMut(u32)) {
        if let Some(id) = self.starts.get(word) {
            return f(id);
        }
        let mut found = [0u32; MAX_WORD_CHARS];
        let mut n = 0;
        let mut start = 0;
        while start < word.len() {
            let table = if start == 0 {
                &self.starts
            } else {
                &self.continuations
            };
            let mut end = word.len().min(start + self.longest);
            let id = loop {
                while end > start && !is_char_start(word, end) {
                    end -= 1;
                }
                if end == start {
                    return f(self.unk);
                }
                if let Some(id) = table.get(&word[start..end]) {
                    break id;
                }
                end -= 1;
            };
            found[n] = id;
            n += 1;
            start = end;
        }
        found[..n].iter().for_each(|&id| f(id));
    }
}

/// A word being gathered: its normalised UTF-8 bytes and its length in characters.
#[derive(Default)]
struct Word {
    bytes: Vec<u8>,
    chars: usize,
}

impl Word {
    fn push_ascii(&mut self, b: u8) {
        self.bytes.push(b);
        self.chars += 1;
    }

    fn push_char(&mut self, c: char) {
        let mut buf = [0u8; 4];
        self.bytes
            .extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        self.chars += 1;
    }
}

fn is_char_start(bytes: &[u8], at: usize) -> bool {
    at == bytes.len() || (bytes[at] as i8) >= -0x40
}

/// BERT's "control" characters: the general category Other (Cc, Cf, Cn, Co, Cs), which the
/// normaliser drops (tab, newline and carriage return are white space, handled before).
fn is_other(c: char) -> bool {
    c.general_category_group() == GeneralCategoryGroup::Other
}

/// BERT's punctuation: ASCII punctuation and every Unicode P* character.
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || c.general_category_group() == GeneralCategoryGroup::Punctuation
}

/// BERT's CJK ideograph blocks (not kana or Hangul).
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F
        | 0x2B820..=0x2CEAF
        | 0xF900..=0xFAFF
        | 0x2F800..=0x2FA1F)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_tokenizer() {
        let t = super::super::static_table::builtin_tokenizer();
        let sample = include_str!("../../../scripts/distill/tokenizer_sample.jsonl");
        let mut checked = 0;
        for (n, line) in sample.lines().enumerate() {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            let text = row["text"].as_str().unwrap();
            let want: Vec<u32> = row["ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap() as u32)
                .collect();
            assert_eq!(t.ids(text), want, "line {}: {text:?}", n + 1);
            checked += 1;
        }
        assert_eq!(checked, 300);
    }

    #[test]
    fn words_split_into_pieces_and_unknown_words_are_one_unk() {
        let vocab = "[UNK]\nun\n##aff\n##able\nx\n[CLS]\n";
        let t = WordPiece::from_vocab(vocab, "[UNK]").unwrap();
        assert_eq!(t.ids("unaffable"), vec![1, 2, 3]);
        assert_eq!(
            t.ids("unaffablez"),
            vec![0],
            "a word that does not split is one [UNK]"
        );
        assert_eq!(t.ids("[CLS]x[cls]"), vec![5, 4, 0, 0, 0]);
        assert_eq!(t.ids(&"x".repeat(101)), vec![0]);
        assert!(t.ids(" \t\u{200b}\u{0}").is_empty());
    }

    #[test]
    fn a_vocabulary_without_its_unknown_token_is_an_error() {
        let e = WordPiece::from_vocab("a\nb\n", "[UNK]").unwrap_err();
        assert!(e.to_string().contains("[UNK]"), "{e}");
        assert!(WordPiece::from_vocab("a\n\nb\n", "a").is_err());
    }
}
