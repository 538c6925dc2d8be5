//! Deterministic answer text: the same prompt and seed give the same words, sized in tokens.

use sha2::{Digest, Sha256};

const WORDS: &[&str] = &[
    "the", "lane", "routes", "each", "request", "to", "a", "model", "that", "meets", "its",
    "latency", "target", "at", "lowest", "cost", "while", "tokens", "stream", "back", "from",
    "region", "with", "cache", "and", "tier", "priority", "standard", "flex", "answer", "quickly",
    "under", "load", "so", "users", "wait", "less", "for", "every", "call", "we", "measure",
];

/// A stable 64-bit digest of some bytes, for seeding.
pub(crate) fn digest64(parts: &[&[u8]]) -> u64 {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    let out = h.finalize();
    u64::from_le_bytes(out[..8].try_into().expect("sha256 has 32 bytes"))
}

/// The natural length of an answer, in tokens, within `[min, max]`.
pub(crate) fn natural_length(prompt_digest: u64, range: [u32; 2]) -> u32 {
    let span = u64::from(range[1] - range[0]) + 1;
    range[0] + (prompt_digest % span) as u32
}

/// `n` tokens of answer text; every token but the first starts with a space, so concatenating
/// them gives the text.
pub(crate) fn tokens(prompt_digest: u64, n: u32) -> Vec<String> {
    (0..n)
        .map(|i| {
            let mut x = prompt_digest ^ (u64::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            x ^= x >> 31;
            x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
            x ^= x >> 29;
            let word = WORDS[(x % WORDS.len() as u64) as usize];
            if i == 0 {
                word.to_string()
            } else {
                format!(" {word}")
            }
        })
        .collect()
}

/// `text` in pieces of about `size` bytes (on character boundaries), as a stream delivers it.
pub(crate) fn chunks(text: &str, size: usize) -> Vec<String> {
    let mut out = Vec::with_capacity(text.len() / size.max(1) + 1);
    let mut rest = text;
    while !rest.is_empty() {
        let mut at = size.min(rest.len());
        while !rest.is_char_boundary(at) {
            at += 1;
        }
        let (piece, tail) = rest.split_at(at);
        out.push(piece.to_string());
        rest = tail;
    }
    out
}

/// Estimated tokens of a text: a quarter of its characters, rounded up.
pub(crate) fn estimate_tokens(chars: usize) -> u32 {
    chars.div_ceil(4) as u32
}

/// Characters in every string of a JSON value (keys excluded), for token estimates.
pub(crate) fn json_text_chars(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::String(s) => s.chars().count(),
        serde_json::Value::Array(a) => a.iter().map(json_text_chars).sum(),
        serde_json::Value::Object(o) => o.values().map(json_text_chars).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_deterministic_and_sized() {
        let d = digest64(&[b"hello"]);
        assert_eq!(tokens(d, 5), tokens(d, 5));
        assert_eq!(tokens(d, 7).len(), 7);
        assert!(!tokens(d, 3)[0].starts_with(' '));
        assert!(tokens(d, 3)[1].starts_with(' '));
        let n = natural_length(d, [10, 20]);
        assert!((10..=20).contains(&n));
    }

    #[test]
    fn estimates_round_up() {
        assert_eq!(estimate_tokens(0), 0);
        assert_eq!(estimate_tokens(1), 1);
        assert_eq!(estimate_tokens(8), 2);
    }
}
