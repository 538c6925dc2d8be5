//! The SLO vocabulary: a call's [`Slo`] and [`SloClass`], and the [`Residency`] it must keep
//! (the tiers that serve it are [`super::ServiceTier`]s).

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

/// Where a request may be processed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Residency {
    /// Only regions of this geography, and its geographic profile; never a global profile.
    Geography(Geography),
    /// Only these regions, and no cross-region profile.
    Regions(Vec<String>),
}
