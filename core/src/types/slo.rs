//! The SLO vocabulary: a call's [`Slo`] and [`SloClass`], the [`ServiceTier`]s that serve
//! it, and the [`Residency`] it must keep.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Geography;

/// The service level a call must meet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slo {
    /// The call's class: its service tier, time limits and default reasoning follow from it.
    #[serde(default)]
    pub class: SloClass,
    /// Time to first token the caller wants.
    #[serde(default, with = "super::units::serde_opt_millis")]
    pub ttft_target: Option<Duration>,
    /// When the whole answer must be complete, from the call's start.
    #[serde(default, with = "super::units::serde_opt_millis")]
    pub deadline: Option<Duration>,
}

/// Service-level classes, from most to least urgent.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum SloClass {
    /// A person is waiting at the screen.
    Interactive,
    /// Ordinary work.
    #[default]
    Standard,
    /// Work that can wait.
    Background,
    /// Bulk offline work.
    Batch,
}

impl SloClass {
    /// All classes, most urgent first.
    pub const ALL: [SloClass; 4] = [
        SloClass::Interactive,
        SloClass::Standard,
        SloClass::Background,
        SloClass::Batch,
    ];

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            SloClass::Interactive => "interactive",
            SloClass::Standard => "standard",
            SloClass::Background => "background",
            SloClass::Batch => "batch",
        }
    }
}

impl std::fmt::Display for SloClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Bedrock service tiers.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ServiceTier {
    /// Served first, at a premium.
    Priority,
    /// On-demand (`default` on the wire).
    #[serde(alias = "default")]
    Standard,
    /// Lower priority under load, discounted.
    Flex,
    /// Provisioned tokens per minute.
    Reserved,
}

/// Each tier's names, fastest first, in the one place a tier is named: its name in
/// configuration and metrics, Converse's `serviceTier.type`, and the OpenAI-compatible APIs'
/// `service_tier` (`None`: their default, or a tier they do not have).
const NAMES: [(ServiceTier, &str, &str, Option<&str>); 4] = [
    (
        ServiceTier::Priority,
        "priority",
        "priority",
        Some("priority"),
    ),
    (ServiceTier::Standard, "standard", "default", None),
    (ServiceTier::Flex, "flex", "flex", Some("flex")),
    (ServiceTier::Reserved, "reserved", "reserved", None),
];

impl ServiceTier {
    /// Every tier, fastest first.
    pub const ALL: [ServiceTier; NAMES.len()] = {
        let mut all = [ServiceTier::Standard; NAMES.len()];
        let mut i = 0;
        while i < NAMES.len() {
            all[i] = NAMES[i].0;
            i += 1;
        }
        all
    };

    fn names(
        self,
    ) -> &'static (
        ServiceTier,
        &'static str,
        &'static str,
        Option<&'static str>,
    ) {
        &NAMES[self.index()]
    }

    /// Its place in [`ServiceTier::ALL`] (fastest first), for tables indexed by tier.
    pub fn index(self) -> usize {
        NAMES
            .iter()
            .position(|(tier, ..)| *tier == self)
            .expect("every tier is named in NAMES")
    }

    /// The snake_case name, as in configuration and metrics (`standard`, not the wire's
    /// `default`).
    pub fn as_str(self) -> &'static str {
        self.names().1
    }

    /// The value of `serviceTier.type` on the wire.
    pub fn wire_name(self) -> &'static str {
        self.names().2
    }

    /// The tier of a wire name (or of its configuration name).
    ///
    /// ```
    /// use laneway::ServiceTier;
    /// assert_eq!(ServiceTier::from_wire("default"), Some(ServiceTier::Standard));
    /// assert_eq!(ServiceTier::from_wire("standard"), Some(ServiceTier::Standard));
    /// assert_eq!(ServiceTier::from_wire("turbo"), None);
    /// ```
    pub fn from_wire(name: &str) -> Option<Self> {
        NAMES
            .iter()
            .find(|(_, snake, wire, _)| *wire == name || *snake == name)
            .map(|(tier, ..)| *tier)
    }

    /// The OpenAI-compatible APIs' `service_tier` for this tier: `None` for their default
    /// (standard) and for tiers they do not have (a reservation).
    pub fn openai_name(self) -> Option<&'static str> {
        self.names().3
    }

    /// The tier an OpenAI-compatible `service_tier` names: `default` is standard; `auto` and
    /// unknown words are none.
    ///
    /// ```
    /// use laneway::ServiceTier;
    /// assert_eq!(ServiceTier::from_openai("flex"), Some(ServiceTier::Flex));
    /// assert_eq!(ServiceTier::from_openai("default"), Some(ServiceTier::Standard));
    /// assert_eq!(ServiceTier::from_openai("reserved"), None);
    /// ```
    pub fn from_openai(word: &str) -> Option<Self> {
        if word == "default" || word == "standard" {
            return Some(ServiceTier::Standard);
        }
        NAMES
            .iter()
            .find(|(.., openai)| *openai == Some(word))
            .map(|(tier, ..)| *tier)
    }
}

impl std::fmt::Display for ServiceTier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a request may be processed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Residency {
    /// Only regions of this geography, and its geographic profile; never a global profile.
    Geography(Geography),
    /// Only these regions, and no cross-region profile.
    Regions(Vec<String>),
}
