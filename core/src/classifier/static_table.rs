//! Pretrained meaning without a model at run time: a static token table distilled from
//! sentence-transformers' all-MiniLM-L6-v2 the Model2Vec way (`scripts/distill`), and the
//! sentence vector it gives a prompt: the L2-normalised mean of its WordPiece ids' rows.
//!
//! The table is `LWT1`, the vocabulary size and the dimension as little-endian `u32`, one
//! `f32` scale per token, then one `i8` row per token: a row's value is `scale · i8`. The
//! shipped one has 30,522 rows of 128 dimensions (4.0 MB); special and unused tokens' rows are
//! zero, so they add nothing.
//!
//! ```
//! use laneway::classifier::StaticTable;
//! let table = StaticTable::builtin();
//! let a = table.embed("How do I reverse a linked list in Rust?");
//! let b = table.embed("Reverse a singly linked list, in Rust please");
//! let c = table.embed("Write a sonnet about the autumn sea");
//! let cos = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f32>();
//! assert!(cos(&a, &b) > cos(&a, &c));
//! ```

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use super::ClassifierError;
use super::wordpiece::WordPiece;

const MAGIC: &[u8; 4] = b"LWT1";
/// A long prompt's sentence vector reads its first this many bytes...
pub(super) const EMBED_HEAD: usize = 768;
/// ...and its last this many.
pub(super) const EMBED_TAIL: usize = 256;
const TABLE: &[u8] = include_bytes!("../../models/minilm_static.lwt");
const VOCAB: &str = include_str!("../../models/minilm_vocab.txt");

/// A static token table and the tokenizer whose ids index it.
#[derive(Clone)]
pub struct StaticTable {
    tokenizer: WordPiece,
    dims: usize,
    scales: Vec<f32>,
    /// `i8` rows, row-major, as stored.
    rows: Cow<'static, [u8]>,
    /// XXH3-64 of the table's bytes: a model records the table it was trained with.
    id: u64,
    dequantised: OnceLock<Vec<f32>>,
}

impl std::fmt::Debug for StaticTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticTable")
            .field("tokens", &self.scales.len())
            .field("dims", &self.dims)
            .field("id", &format_args!("{:016x}", self.id))
            .finish()
    }
}

/// The tokenizer of the shipped table.
#[cfg(test)]
pub(crate) fn builtin_tokenizer() -> WordPiece {
    StaticTable::builtin().tokenizer.clone()
}

impl StaticTable {
    /// The table shipped in the crate (all-MiniLM-L6-v2, 128 dimensions), read once.
    pub fn builtin() -> Arc<StaticTable> {
        static BUILTIN: OnceLock<Arc<StaticTable>> = OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                let tokenizer =
                    WordPiece::from_vocab(VOCAB, "[UNK]").expect("the shipped vocabulary is valid");
                Arc::new(
                    StaticTable::from_parts(tokenizer, Cow::Borrowed(TABLE))
                        .expect("the shipped table is valid"),
                )
            })
            .clone()
    }

    /// A table from its file's bytes and the tokenizer of its vocabulary.
    pub fn from_parts(
        tokenizer: WordPiece,
        bytes: Cow<'static, [u8]>,
    ) -> Result<StaticTable, ClassifierError> {
        let corrupt = |why: String| ClassifierError::Corrupt(format!("static table: {why}"));
        if bytes.len() < 12 || &bytes[..4] != MAGIC {
            return Err(corrupt("it does not start with LWT1".into()));
        }
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        let (tokens, dims) = (u32_at(4) as usize, u32_at(8) as usize);
        if dims == 0 || tokens == 0 {
            return Err(corrupt(format!("{tokens} tokens of {dims} dimensions")));
        }
        let expected = 12 + 4 * tokens + tokens * dims;
        if bytes.len() != expected {
            return Err(corrupt(format!(
                "{} bytes where {tokens} tokens of {dims} dimensions need {expected}",
                bytes.len()
            )));
        }
        if tokens != tokenizer.vocab_size() {
            return Err(corrupt(format!(
                "{tokens} rows for a vocabulary of {}",
                tokenizer.vocab_size()
            )));
        }
        let scales: Vec<f32> = bytes[12..12 + 4 * tokens]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        if scales.iter().any(|s| !s.is_finite()) {
            return Err(corrupt("a scale is not finite".into()));
        }
        let id = xxhash_rust::xxh3::xxh3_64(&bytes);
        let rows = match bytes {
            Cow::Borrowed(b) => Cow::Borrowed(&b[12 + 4 * tokens..]),
            Cow::Owned(mut b) => {
                b.drain(..12 + 4 * tokens);
                Cow::Owned(b)
            }
        };
        Ok(StaticTable {
            tokenizer,
            dims,
            scales,
            rows,
            id,
            dequantised: OnceLock::new(),
        })
    }

    /// The rows as `f32` (`scale · i8`), made at first use: adding them is several times
    /// faster than converting `i8` rows as they are read (15.6 MB for the shipped table).
    fn dequantised(&self) -> &[f32] {
        self.dequantised.get_or_init(|| {
            let mut out = Vec::with_capacity(self.rows.len());
            for (row, scale) in self.rows.chunks_exact(self.dims).zip(&self.scales) {
                out.extend(row.iter().map(|&q| scale * f32::from(q as i8)));
            }
            out
        })
    }

    /// The dimension of the vectors.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The XXH3-64 of the table file, which a model trained on it records.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The tokenizer whose ids index the table.
    pub fn tokenizer(&self) -> &WordPiece {
        &self.tokenizer
    }

    /// The prompt's unit-length sentence vector (all zeros when no token has a row).
    pub fn embed(&self, text: &str) -> Vec<f32> {
        let mut out = vec![0f32; self.dims];
        self.embed_into(text, &mut out);
        out
    }

    /// [`StaticTable::embed`] into `out` (of [`StaticTable::dims`] values). A prompt over
    /// 1,024 bytes is read only in its first 768 and last 256 bytes (about 190 and 65 tokens
    /// of English), where instructions and the
    /// question sit: the sentence model it was distilled from reads at most 256 tokens.
    pub fn embed_into(&self, text: &str, out: &mut [f32]) {
        assert_eq!(out.len(), self.dims, "the output has the table's dimension");
        out.iter_mut().for_each(|x| *x = 0.0);
        let (head, tail) = if text.len() <= EMBED_HEAD + EMBED_TAIL {
            (text, None)
        } else {
            let head = &text[..text.floor_char_boundary(EMBED_HEAD)];
            // The tail starts after a white space, so that it does not begin mid-word.
            let from = text.ceil_char_boundary(text.len() - EMBED_TAIL);
            let tail = &text[from..];
            let tail = tail
                .find(char::is_whitespace)
                .map_or(tail, |at| &tail[at..]);
            (head, Some(tail))
        };
        let rows = self.dequantised();
        let mut add = |id: u32| {
            let id = id as usize;
            if self.scales[id] == 0.0 {
                return;
            }
            let row = &rows[id * self.dims..(id + 1) * self.dims];
            for (o, r) in out.iter_mut().zip(row) {
                *o += r;
            }
        };
        self.tokenizer.for_each_id(head, &mut add);
        if let Some(tail) = tail {
            self.tokenizer.for_each_id(tail, &mut add);
        }
        let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            out.iter_mut().for_each(|x| *x /= norm);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_table_reads_and_empty_text_is_zero() {
        let t = StaticTable::builtin();
        assert_eq!((t.dims(), t.scales.len()), (128, 30_522));
        assert!(t.embed("").iter().all(|x| *x == 0.0));
        assert!(t.embed("[CLS] [SEP]").iter().all(|x| *x == 0.0));
        let v = t.embed("hello world");
        let norm: f32 = v.iter().map(|x| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-5);
    }

    #[test]
    fn a_damaged_table_is_an_error_not_a_panic() {
        let t = StaticTable::builtin();
        for bytes in [&TABLE[..100], &TABLE[..TABLE.len() - 1], b"LWT2xxxxxxxx"] {
            let e = StaticTable::from_parts(t.tokenizer.clone(), Cow::Owned(bytes.to_vec()));
            assert!(matches!(e, Err(ClassifierError::Corrupt(_))));
        }
    }
}
