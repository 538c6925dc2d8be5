//! Service tiers as data: a [`ServiceTier`] is a name the configuration declares
//! (`[tiers.<name>]`), with its spelling on each API. Four are built in (priority, standard,
//! flex, reserved); any other, such as `ultrafast`, is declared by a configuration and
//! registered for the whole process when that configuration loads.

use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

/// A Bedrock service tier: a name the configuration declares under `[tiers]`, with its
/// spelling on Converse (`serviceTier.type`) and on the OpenAI-compatible APIs
/// (`service_tier`).
///
/// Priority, standard, flex and reserved are built in; a configuration declares any other
/// (`[tiers.ultrafast] converse = "ultrafast"`), and from then on it parses, routes, prices and
/// reports like the built-in ones. A tier is a small copyable handle: its names live in a
/// process-wide table that only grows, and a name always means the same tier.
///
/// ```
/// use laneway::ServiceTier;
/// assert_eq!(ServiceTier::named("flex"), Some(ServiceTier::FLEX));
/// assert_eq!(ServiceTier::STANDARD.as_str(), "standard");
/// assert_eq!(ServiceTier::STANDARD.converse_name(), Some("default"));
/// assert_eq!(ServiceTier::named("turbo"), None);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServiceTier(u16);

/// One tier's names: in configuration and metrics, on Converse, and on the OpenAI-compatible
/// APIs (`None`: the API's default, or a tier the API does not carry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Names {
    name: &'static str,
    converse: Option<&'static str>,
    openai: Option<&'static str>,
}

/// The built-in tiers, fastest first; `defaults.toml` declares them with the same names.
const BUILT_IN: [Names; 4] = [
    Names {
        name: "priority",
        converse: Some("priority"),
        openai: Some("priority"),
    },
    Names {
        name: "standard",
        converse: Some("default"),
        openai: None,
    },
    Names {
        name: "flex",
        converse: Some("flex"),
        openai: Some("flex"),
    },
    Names {
        name: "reserved",
        converse: Some("reserved"),
        openai: None,
    },
];

/// How many tiers a process may declare beyond the built-in ones: each declared name lives as
/// long as the process, so the table is bounded.
pub const MAX_DECLARED_TIERS: usize = 60;

/// Declared tiers, in the order they were declared; a slot is written once, under
/// [`DECLARING`], and read without a lock.
static DECLARED: [OnceLock<Names>; MAX_DECLARED_TIERS] =
    [const { OnceLock::new() }; MAX_DECLARED_TIERS];
static DECLARING: Mutex<usize> = Mutex::new(0);

impl ServiceTier {
    /// Served first, at a premium.
    pub const PRIORITY: ServiceTier = ServiceTier(0);
    /// On-demand (`default` on the wire).
    pub const STANDARD: ServiceTier = ServiceTier(1);
    /// Lower priority under load, discounted.
    pub const FLEX: ServiceTier = ServiceTier(2);
    /// Provisioned tokens per minute.
    pub const RESERVED: ServiceTier = ServiceTier(3);

    fn names(self) -> Names {
        let i = usize::from(self.0);
        match BUILT_IN.get(i) {
            Some(names) => *names,
            // A handle is only made for a slot already written.
            None => *DECLARED[i - BUILT_IN.len()]
                .get()
                .expect("a tier handle names a declared slot"),
        }
    }

    /// Every tier known to this process: the built-in ones, then those declared, in order.
    pub fn known() -> Vec<ServiceTier> {
        let declared = DECLARED.iter().take_while(|slot| slot.get().is_some()).count();
        (0..BUILT_IN.len() + declared)
            .map(|i| ServiceTier(i as u16))
            .collect()
    }

    /// Declares a tier named `name` with its Converse and OpenAI-compatible spellings, or
    /// returns the one already declared under that name with the same spellings.
    ///
    /// A name is lowercase letters, digits and `_`, starting with a letter, at most 32
    /// characters; `default` is Converse's word for standard and cannot be declared.
    ///
    /// ```
    /// use laneway::ServiceTier;
    /// let fast = ServiceTier::declare("doc_fast", Some("doc_fast"), Some("doc_fast")).unwrap();
    /// assert_eq!(ServiceTier::named("doc_fast"), Some(fast));
    /// assert_eq!(fast.openai_name(), Some("doc_fast"));
    /// // The same name cannot mean another spelling.
    /// assert!(ServiceTier::declare("doc_fast", Some("fast"), None).is_err());
    /// assert!(ServiceTier::declare("Fast!", None, None).is_err());
    /// ```
    pub fn declare(
        name: &str,
        converse: Option<&str>,
        openai: Option<&str>,
    ) -> Result<ServiceTier, TierError> {
        check_name(name)?;
        for word in [converse, openai].into_iter().flatten() {
            if word.is_empty() || word.len() > 64 || word.chars().any(char::is_control) {
                return Err(TierError::new(format!(
                    "tier {name:?}: a wire spelling must be 1 to 64 printable characters, not {word:?}"
                )));
            }
        }
        let mut declared = DECLARING.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tier) = ServiceTier::named(name) {
            let had = tier.names();
            if had.converse == converse && had.openai == openai {
                return Ok(tier);
            }
            return Err(TierError::new(format!(
                "tier {name:?} is already declared in this process with converse = {:?} and \
                 openai = {:?}; a tier's name always means the same wire spellings",
                had.converse, had.openai
            )));
        }
        let Some(slot) = DECLARED.get(*declared) else {
            return Err(TierError::new(format!(
                "tier {name:?}: a process may declare at most {MAX_DECLARED_TIERS} tiers beyond the built-in ones"
            )));
        };
        let leak = |s: &str| &*Box::leak(s.to_owned().into_boxed_str());
        let names = Names {
            name: leak(name),
            converse: converse.map(leak),
            openai: openai.map(leak),
        };
        slot.set(names)
            .expect("slots are written only under DECLARING, in order");
        let tier = ServiceTier((BUILT_IN.len() + *declared) as u16);
        *declared += 1;
        Ok(tier)
    }

    /// The tier of this configuration name (or Converse's `default`, standard), if declared.
    pub fn named(name: &str) -> Option<ServiceTier> {
        if name == "default" {
            return Some(ServiceTier::STANDARD);
        }
        ServiceTier::known()
            .into_iter()
            .find(|t| t.names().name == name)
    }

    /// The snake_case name, as in configuration and metrics (`standard`, not the wire's
    /// `default`).
    pub fn as_str(self) -> &'static str {
        self.names().name
    }

    /// The value of Converse's (and InvokeModel's) `serviceTier.type`; `None` for a tier
    /// declared without one, which Converse is not sent.
    pub fn converse_name(self) -> Option<&'static str> {
        self.names().converse
    }

    /// The tier of a Converse `serviceTier.type` (or of a configuration name).
    ///
    /// ```
    /// use laneway::ServiceTier;
    /// assert_eq!(ServiceTier::from_wire("default"), Some(ServiceTier::STANDARD));
    /// assert_eq!(ServiceTier::from_wire("standard"), Some(ServiceTier::STANDARD));
    /// assert_eq!(ServiceTier::from_wire("turbo"), None);
    /// ```
    pub fn from_wire(word: &str) -> Option<Self> {
        ServiceTier::known()
            .into_iter()
            .find(|t| t.names().converse == Some(word))
            .or_else(|| ServiceTier::named(word))
    }

    /// The OpenAI-compatible APIs' `service_tier` for this tier: `None` for their default
    /// (standard) and for tiers they do not carry (a reservation).
    pub fn openai_name(self) -> Option<&'static str> {
        self.names().openai
    }

    /// The tier an OpenAI-compatible `service_tier` names: `default` is standard; `auto` and
    /// unknown words are none.
    ///
    /// ```
    /// use laneway::ServiceTier;
    /// assert_eq!(ServiceTier::from_openai("flex"), Some(ServiceTier::FLEX));
    /// assert_eq!(ServiceTier::from_openai("default"), Some(ServiceTier::STANDARD));
    /// assert_eq!(ServiceTier::from_openai("reserved"), None);
    /// ```
    pub fn from_openai(word: &str) -> Option<Self> {
        if word == "default" || word == "standard" {
            return Some(ServiceTier::STANDARD);
        }
        ServiceTier::known()
            .into_iter()
            .find(|t| t.names().openai == Some(word))
    }
}

fn check_name(name: &str) -> Result<(), TierError> {
    let well_formed = name.len() <= 32
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !well_formed {
        return Err(TierError::new(format!(
            "tier name {name:?}: lowercase letters, digits and _, starting with a letter, at most 32 characters"
        )));
    }
    if name == "default" {
        return Err(TierError::new(
            "tier name \"default\" is Converse's word for standard; name the tier otherwise",
        ));
    }
    Ok(())
}

/// A tier that cannot be declared or is not known, with what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TierError(String);

impl TierError {
    fn new(message: impl Into<String>) -> Self {
        TierError(message.into())
    }

    /// The error for a name no configuration declared, listing the known ones.
    fn unknown(name: &str) -> Self {
        let known: Vec<_> = ServiceTier::known().into_iter().map(ServiceTier::as_str).collect();
        TierError::new(format!(
            "unknown service tier {name:?}: known are {}; a new tier is declared under [tiers.{name}]",
            known.join(", ")
        ))
    }
}

impl std::fmt::Debug for ServiceTier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ServiceTier({:?})", self.as_str())
    }
}

impl std::fmt::Display for ServiceTier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ServiceTier {
    type Err = TierError;

    /// A declared tier's name (or `default`, standard).
    fn from_str(name: &str) -> Result<Self, TierError> {
        ServiceTier::named(name).ok_or_else(|| TierError::unknown(name))
    }
}

impl Serialize for ServiceTier {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ServiceTier {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_tiers_round_trip_through_every_spelling() {
        for tier in [
            ServiceTier::PRIORITY,
            ServiceTier::STANDARD,
            ServiceTier::FLEX,
            ServiceTier::RESERVED,
        ] {
            assert_eq!(ServiceTier::named(tier.as_str()), Some(tier));
            assert_eq!(ServiceTier::from_wire(tier.converse_name().unwrap()), Some(tier));
            let json = serde_json::to_string(&tier).unwrap();
            assert_eq!(serde_json::from_str::<ServiceTier>(&json).unwrap(), tier);
        }
        assert_eq!(
            serde_json::from_str::<ServiceTier>("\"default\"").unwrap(),
            ServiceTier::STANDARD
        );
    }

    #[test]
    fn an_undeclared_name_is_refused_with_the_known_ones() {
        let e = serde_json::from_str::<ServiceTier>("\"warp\"").unwrap_err();
        assert!(e.to_string().contains("unknown service tier \"warp\""), "{e}");
        assert!(e.to_string().contains("priority, standard, flex, reserved"), "{e}");
        assert!(e.to_string().contains("[tiers.warp]"), "{e}");
    }

    #[test]
    fn a_declared_tier_is_known_by_each_of_its_names() {
        let t = ServiceTier::declare("test_warp", Some("warp_c"), Some("warp_o")).unwrap();
        assert_eq!(ServiceTier::from_wire("warp_c"), Some(t));
        assert_eq!(ServiceTier::from_openai("warp_o"), Some(t));
        assert_eq!("test_warp".parse::<ServiceTier>().unwrap(), t);
        assert!(ServiceTier::known().contains(&t));
        // Declaring it again with the same spellings is the same tier.
        assert_eq!(
            ServiceTier::declare("test_warp", Some("warp_c"), Some("warp_o")).unwrap(),
            t
        );
        assert!(ServiceTier::declare("default", None, None).is_err());
        assert!(ServiceTier::declare("flex", Some("flexible"), None).is_err());
        assert!(ServiceTier::declare("x", Some(""), None).is_err());
    }
}
