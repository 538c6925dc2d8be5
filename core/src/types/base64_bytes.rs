//! Bytes as base64 text in serde (a Python `bytes` or a JS `Uint8Array` arrives raw).

use base64::Engine as _;
use serde::{Deserializer, Serializer};

pub(crate) fn serialize<S: Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(b))
}

/// Base64 text, or raw bytes where the format has them (a Python `bytes` through
/// pythonize, a byte string in CBOR or MessagePack).
pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    d.deserialize_any(Bytes)
}

struct Bytes;

impl<'de> serde::de::Visitor<'de> for Bytes {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("base64 text or bytes")
    }

    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Vec<u8>, E> {
        base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_err(E::custom)
    }

    fn visit_bytes<E: serde::de::Error>(self, b: &[u8]) -> Result<Vec<u8>, E> {
        Ok(b.to_vec())
    }

    fn visit_byte_buf<E: serde::de::Error>(self, b: Vec<u8>) -> Result<Vec<u8>, E> {
        Ok(b)
    }
}

/// The same for an optional field (`None` when absent).
pub(crate) mod option {
    use serde::{Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(b: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        match b {
            Some(b) => super::serialize(b, s),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Vec<u8>>, D::Error> {
        super::deserialize(d).map(Some)
    }
}

#[cfg(test)]
mod tests {
    #[derive(serde::Deserialize)]
    struct Blob {
        #[serde(with = "super")]
        bytes: Vec<u8>,
    }

    #[test]
    fn base64_text_is_decoded_and_anything_else_is_named() {
        let blob: Blob = serde_json::from_str(r#"{"bytes": "JVBERg=="}"#).unwrap();
        assert_eq!(blob.bytes, b"%PDF");
        let e = serde_json::from_str::<Blob>(r#"{"bytes": 7}"#)
            .err()
            .unwrap();
        assert!(e.to_string().contains("base64 text or bytes"), "{e}");
        let e = serde_json::from_str::<Blob>(r#"{"bytes": "not base64!"}"#)
            .err()
            .unwrap();
        assert!(e.to_string().contains("Invalid"), "{e}");
    }
}
