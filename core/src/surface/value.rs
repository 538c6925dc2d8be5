//! A JSON value from any serde format, binary content included: what a binding's dynamic
//! values (a Python dict with `bytes` in it) become before the schema reads them.

use std::fmt;

use base64::Engine as _;
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// A [`serde_json::Value`] that also accepts bytes (as base64 text, the schema's form for
/// binary content).
///
/// ```
/// use laneway::surface::AnyValue;
/// let v: AnyValue = serde_json::from_str(r#"{"a": [1, 2.5, null]}"#).unwrap();
/// assert_eq!(v.0["a"][1], 2.5);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AnyValue(pub Value);

impl<'de> Deserialize<'de> for AnyValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(AnyVisitor).map(AnyValue)
    }
}

struct AnyVisitor;

impl<'de> Visitor<'de> for AnyVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-like value (bytes allowed)")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom(format!("{v} is not a finite number")))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_bytes<E>(self, v: &[u8]) -> Result<Value, E> {
        Ok(Value::String(
            base64::engine::general_purpose::STANDARD.encode(v),
        ))
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(AnyVisitor)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(AnyValue(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some((k, AnyValue(v))) = map.next_entry::<String, AnyValue>()? {
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::value::{BytesDeserializer, Error};

    #[test]
    fn bytes_become_base64_text() {
        let v = AnyValue::deserialize(BytesDeserializer::<Error>::new(&[137, 80, 78, 71])).unwrap();
        assert_eq!(v.0, Value::String("iVBORw==".into()));
    }
}
