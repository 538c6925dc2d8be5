//! Call ids: unique per call, and carrying what feedback on the call needs (the family, the
//! model that served, the difficulty band), so that feedback needs no memory of past calls and
//! may come from another process, or after a restart, with the same configuration.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{Error, Result};

const PREFIX: &str = "lw1:";

/// What a call id says of its call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallRef<'a> {
    /// The family the model served for, if any.
    pub family: Option<&'a str>,
    /// The configured model that served.
    pub model: &'a str,
    /// The task kind and difficulty band its family's router put the prompt in, if routed.
    pub cell: Option<(&'a str, u8)>,
}

impl CallRef<'_> {
    /// A fresh id for this call: `lw1:<16 hex digits>:<kind>.<band> or -:<family>/<model>`.
    ///
    /// ```
    /// use laneway::types::CallRef;
    /// let call = CallRef {
    ///     family: Some("nova"),
    ///     model: "amazon.nova-lite-v1:0",
    ///     cell: Some(("extract", 3)),
    /// };
    /// let id = call.new_id();
    /// assert_eq!(CallRef::parse(&id).unwrap(), call);
    /// assert_ne!(call.new_id(), id);
    /// ```
    pub fn new_id(&self) -> String {
        static PROCESS: OnceLock<u64> = OnceLock::new();
        static SEQUENCE: AtomicU64 = AtomicU64::new(0);
        let unique =
            PROCESS.get_or_init(rand::random::<u64>) ^ SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let cell = self
            .cell
            .map_or_else(|| "-".to_string(), |(kind, band)| format!("{kind}.{band}"));
        format!(
            "{PREFIX}{unique:016x}:{cell}:{}/{}",
            self.family.unwrap_or_default(),
            self.model
        )
    }

    /// Reads a call id; an error says what is malformed.
    pub fn parse(id: &str) -> Result<CallRef<'_>> {
        let malformed = |what: &str| {
            Error::invalid(
                "call_id",
                format!(
                    "{id:?} is not a Laneway call id ({what}; ids come from a response's decision.call_id)"
                ),
            )
        };
        let rest = id
            .strip_prefix(PREFIX)
            .ok_or_else(|| malformed("no lw1: prefix"))?;
        let mut parts = rest.splitn(3, ':');
        let (unique, cell, served) = match (parts.next(), parts.next(), parts.next()) {
            (Some(u), Some(b), Some(s)) => (u, b, s),
            _ => return Err(malformed("too few parts")),
        };
        if unique.len() != 16 || !unique.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(malformed("its unique part is not 16 hex digits"));
        }
        let cell = match cell {
            "-" => None,
            c => {
                let (kind, band) = c
                    .split_once('.')
                    .ok_or_else(|| malformed("its cell is not kind.band"))?;
                let band = band
                    .parse::<u8>()
                    .map_err(|_| malformed("its band is not a number"))?;
                Some((kind, band))
            }
        };
        let (family, model) = served
            .split_once('/')
            .ok_or_else(|| malformed("no family/model part"))?;
        if model.is_empty() {
            return Err(malformed("no model"));
        }
        Ok(CallRef {
            family: (!family.is_empty()).then_some(family),
            model,
            cell,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_with_or_without_family_and_band() {
        for call in [
            CallRef {
                family: None,
                model: "my-endpoint/v2",
                cell: None,
            },
            CallRef {
                family: Some("claude"),
                model: "anthropic.claude-haiku-4-5-20251001-v1:0",
                cell: Some(("code", 7)),
            },
        ] {
            assert_eq!(CallRef::parse(&call.new_id()).unwrap(), call);
        }
    }

    proptest::proptest! {
        #[test]
        fn any_text_parses_or_is_an_error_never_a_panic(id in ".*") {
            let _ = CallRef::parse(&id);
        }

        #[test]
        fn every_id_made_reads_back(
            family in proptest::option::of("[a-z][a-z0-9_-]{0,12}"),
            model in "[a-zA-Z0-9.:/_-]{1,60}",
            cell in proptest::option::of(("[a-z]{1,10}", proptest::num::u8::ANY)),
        ) {
            let call = CallRef {
                family: family.as_deref(),
                model: &model,
                cell: cell.as_ref().map(|(k, b)| (k.as_str(), *b)),
            };
            let id = call.new_id();
            proptest::prop_assert_eq!(CallRef::parse(&id).unwrap(), call);
        }
    }

    #[test]
    fn malformed_ids_are_errors_that_say_why() {
        for (id, why) in [
            ("", "prefix"),
            ("lw1:0123", "too few"),
            ("lw1:xyz:code.1:nova/m", "16 hex"),
            ("lw1:0123456789abcdef:x:nova/m", "kind.band"),
            ("lw1:0123456789abcdef:code.x:nova/m", "band"),
            ("lw1:0123456789abcdef:code.1:nova", "family/model"),
            ("lw1:0123456789abcdef:code.1:nova/", "no model"),
            ("lw1:0123456789abcdef:code.300:nova/m", "band"),
        ] {
            let e = CallRef::parse(id).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains("call_id"), "{id}: {e}");
        }
    }
}
