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
    /// Attempts that answered.
    pub attempts_ok: u64,
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

/// One target's attempts: answered, and failed by kind.
#[derive(Debug, Default)]
struct Counts {
    ok: u64,
    errors: BTreeMap<ErrorKind, u64>,
}

/// Attempts per target, counted as they happen.
#[derive(Debug, Default)]
pub(super) struct Attempts(BTreeMap<TargetKey, Counts>);

impl Attempts {
    /// Counts an attempt at a target (`Err(kind)` when it failed); whether it is the target's
    /// first.
    pub(super) fn add(
        &mut self,
        region: &str,
        target: &str,
        tier: Option<ServiceTier>,
        outcome: Result<(), ErrorKind>,
    ) -> bool {
        let key = (region.to_string(), target.to_string(), tier);
        let first = !self.0.contains_key(&key);
        let counts = self.0.entry(key).or_default();
        match outcome {
            Ok(()) => counts.ok += 1,
            Err(kind) => *counts.errors.entry(kind).or_default() += 1,
        }
        first
    }

    /// Every target's attempts, for the trace's load lines.
    pub(super) fn loads(&self) -> Vec<super::record::TargetLoad> {
        self.0
            .iter()
            .map(|((region, target, tier), c)| super::record::TargetLoad {
                region: region.clone(),
                target: target.clone(),
                tier: tier.map(|t| t.as_str().to_string()),
                ok: c.ok,
                failed: c
                    .errors
                    .iter()
                    .map(|(k, n)| (k.as_str().to_string(), *n))
                    .collect(),
                in_flight: 0,
                limit: None,
            })
            .collect()
    }

    /// Every target counted, by region, id and tier.
    pub(super) fn targets(&self) -> Vec<TargetKey> {
        self.0.keys().cloned().collect()
    }

    /// Adds the counts to `targets` (breakers from the state), each target once.
    pub(super) fn merge_into(&self, targets: &mut Vec<TargetFigures>) {
        for ((region, target, tier), counts) in &self.0 {
            let found = targets
                .iter_mut()
                .find(|t| t.region == *region && t.target == *target && t.tier == *tier);
            let t = match found {
                Some(t) => t,
                None => {
                    targets.push(TargetFigures {
                        region: region.clone(),
                        target: target.clone(),
                        tier: *tier,
                        ..TargetFigures::default()
                    });
                    targets.last_mut().expect("pushed")
                }
            };
            t.attempts_ok = counts.ok;
            t.attempt_errors = counts.errors.clone();
        }
        targets.sort_by(|a, b| (&a.region, &a.target, a.tier).cmp(&(&b.region, &b.target, b.tier)));
    }
}
