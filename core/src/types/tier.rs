//! Service tiers as data: a [`ServiceTier`] is a name a configuration declares
//! (`[tiers.<name>]`), with its spelling on each API. The built-in configuration's tiers
//! (`defaults.toml`: priority, standard, flex, reserved, ultrafast) are known from the first
//! use of any tier, four of them with constants; any other is declared for the whole process
//! when the configuration that declares it loads.

use std::sync::{LazyLock, Mutex, OnceLock};

use serde::{Deserialize, Serialize};

/// A Bedrock service tier: a name the configuration declares under `[tiers]`, with its
/// spelling on Converse (`serviceTier.type`) and on the OpenAI-compatible APIs
/// (`service_tier`).
///
/// The built-in configuration declares priority, standard, flex, reserved and ultrafast; a
/// configuration declares any other (`[tiers.turbo] converse = "turbo"`), and from then on it
/// parses, routes, prices and reports like the built-in ones. A tier is a small copyable handle: its names live in a
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

/// How many tiers a process may know, the built-in configuration's included: each declared
/// name lives as long as the process, so the table is bounded.
pub const MAX_DECLARED_TIERS: usize = 64;

/// Known tiers, in the order they were declared; a slot is written once, under
/// [`DECLARING`] (which counts the written ones), and read without a lock.
static DECLARED: [OnceLock<Names>; MAX_DECLARED_TIERS] =
    [const { OnceLock::new() }; MAX_DECLARED_TIERS];
static DECLARING: Mutex<usize> = Mutex::new(0);

/// The built-in configuration's tiers (`defaults.toml`'s `[tiers]`, the one place their
/// spellings are written), declared at the first use of any tier: the four with constants
/// first, in their constants' order, then the others by name.
static BUILT_IN: LazyLock<()> = LazyLock::new(|| {
    let defaults: toml::Table =
        toml::from_str(include_str!("../../defaults.toml")).expect("defaults.toml parses");
    let tiers = defaults
        .get("tiers")
        .and_then(toml::Value::as_table)
        .expect("defaults.toml declares [tiers]");
    let spelling =
        |name: &str, api: &str| tiers[name].get(api).and_then(toml::Value::as_str).map(leak);
    let with_constants = ["priority", "standard", "flex", "reserved"];
    let others = tiers
        .keys()
        .filter(|n| !with_constants.contains(&n.as_str()));
    let mut count = DECLARING.lock().unwrap_or_else(|e| e.into_inner());
    for name in with_constants.into_iter().chain(others.map(String::as_str)) {
        let names = Names {
            name: leak(name),
            converse: spelling(name, "converse"),
            openai: spelling(name, "openai"),
        };
        DECLARED[*count]
            .set(names)
            .expect("the built-in tiers are declared first");
        *count += 1;
    }
});

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}

/// The slots of every known tier, the built-in configuration's declared first.
fn slots() -> impl Iterator<Item = &'static Names> {
    LazyLock::force(&BUILT_IN);
    DECLARED.iter().map_while(OnceLock::get)
}

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
        LazyLock::force(&BUILT_IN);
        // A handle is only made for a slot already written.
        *DECLARED[usize::from(self.0)]
            .get()
            .expect("a tier handle names a written slot")
    }

    /// Every tier known to this process: the built-in configuration's, then those other
    /// configurations declared, in order.
    pub fn known() -> Vec<ServiceTier> {
        (0..slots().count())
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
        LazyLock::force(&BUILT_IN);
        let mut count = DECLARING.lock().unwrap_or_else(|e| e.into_inner());
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
        let Some(slot) = DECLARED.get(*count) else {
            return Err(TierError::new(format!(
                "tier {name:?}: a process may know at most {MAX_DECLARED_TIERS} tiers"
            )));
        };
        slot.set(Names {
            name: leak(name),
            converse: converse.map(leak),
            openai: openai.map(leak),
        })
        .expect("slots are written only under DECLARING, in order");
        let tier = ServiceTier(*count as u16);
        *count += 1;
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
        let known: Vec<_> = ServiceTier::known()
            .into_iter()
            .map(ServiceTier::as_str)
            .collect();
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
            assert_eq!(
                ServiceTier::from_wire(tier.converse_name().unwrap()),
                Some(tier)
            );
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
        assert!(
            e.to_string().contains("unknown service tier \"warp\""),
            "{e}"
        );
        assert!(
            e.to_string().contains("priority, standard, flex, reserved"),
            "{e}"
        );
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
