//! The health of the router's targets and regions as metrics: each target's breaker and its
//! failed attempts by error kind (throttles among them), and each region's ejection. The
//! breakers and ejections are read from the live state when a snapshot is taken; the failed
//! attempts are counted here as they happen.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::types::{ErrorKind, ServiceTier};

/// A target's breaker, as a metric's value: 0 closed, 1 half open, 2 open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakerState {
    /// Traffic goes as planned.
    #[default]
    Closed = 0,
    /// A probe may go.
    HalfOpen = 1,
    /// Traffic goes elsewhere until its timer runs out.
    Open = 2,
}

/// One target's health: its breaker now and its failed attempts so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TargetFigures {
    /// The region.
    pub region: String,
    /// The model, profile or endpoint id.
    pub target: String,
    /// The service tier the breaker is kept for, if any.
    pub tier: Option<ServiceTier>,
    /// The breaker now.
    pub breaker: BreakerState,
    /// Failed attempts by error kind (`throttled` among them), failovers included.
    pub attempt_errors: BTreeMap<ErrorKind, u64>,
}

impl TargetFigures {
    /// The target's labels: `cloud.region`, `laneway.target` and, when it has one,
    /// `laneway.tier`.
    pub fn labels(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [
            ("cloud.region", Some(self.region.as_str())),
            ("laneway.target", Some(self.target.as_str())),
            ("laneway.tier", self.tier.map(|t| t.as_str())),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k, v?)))
    }
}

/// A region's health.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RegionFigures {
    /// Ejected now for stalling or failing (`routing.outlier`): calls go to other regions.
    pub ejected: bool,
}

/// Targets' and regions' health.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HealthFigures {
    /// Each target seen so far, by region, id and tier.
    pub targets: Vec<TargetFigures>,
    /// Each region the configuration routes to.
    pub regions: BTreeMap<String, RegionFigures>,
}

type TargetKey = (String, String, Option<ServiceTier>);

/// Failed attempts per target, counted as they happen.
#[derive(Debug, Default)]
pub(super) struct AttemptErrors(BTreeMap<TargetKey, BTreeMap<ErrorKind, u64>>);

impl AttemptErrors {
    pub(super) fn add(
        &mut self,
        region: &str,
        target: &str,
        tier: Option<ServiceTier>,
        kind: ErrorKind,
    ) {
        let key = (region.to_string(), target.to_string(), tier);
        *self.0.entry(key).or_default().entry(kind).or_default() += 1;
    }

    /// Adds the counts to `targets` (breakers from the state), each target once.
    pub(super) fn merge_into(&self, targets: &mut Vec<TargetFigures>) {
        for ((region, target, tier), errors) in &self.0 {
            let found = targets
                .iter_mut()
                .find(|t| t.region == *region && t.target == *target && t.tier == *tier);
            match found {
                Some(t) => t.attempt_errors = errors.clone(),
                None => targets.push(TargetFigures {
                    region: region.clone(),
                    target: target.clone(),
                    tier: *tier,
                    breaker: BreakerState::Closed,
                    attempt_errors: errors.clone(),
                }),
            }
        }
        targets.sort_by(|a, b| (&a.region, &a.target, a.tier).cmp(&(&b.region, &b.target, b.tier)));
    }
}
