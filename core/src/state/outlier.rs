//! Region-level outlier detection, as Envoy does it for hosts: a region whose attempts stall,
//! reset or time out several times in a row is ejected as a whole (every model, profile and
//! tier called there) for a while that grows with each ejection; never more than a bounded
//! share of the regions at once, so a fleet-wide fault never ejects them all.
//!
//! A breaker learns one target at a time: after a regional endpoint stalls, each of its other
//! targets would still be tried (and cost a time limit) before its own breaker opened.
//!
//! A first token late enough to send a hedge is only a suspicion: it counts toward the run of
//! failures, so attempts stalling together reach it before any of them ends, but it ejects
//! nothing until a failure confirms it (the hedge answering first from elsewhere, a time limit,
//! a reset). A load spike makes many first tokens late at once and their first attempts then
//! answer: a success ends the run, and the only region that was answering stays.

use std::collections::HashMap;
use std::sync::RwLock;
use std::time::{Duration, Instant};

use crate::config::OutlierConfig;

/// One region's recent record.
#[derive(Debug, Clone, Default)]
struct RegionHealth {
    /// Failures in a row since the last success.
    consecutive: u32,
    /// Until when the region is ejected (in the past once it ran out).
    ejected_until: Option<Instant>,
    /// Ejections in a row: the next lasts `base_ejection` times one more than this.
    ejections: u32,
}

/// What an attempt showed of its region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// It stalled, reset, timed out or met a server error.
    Failed,
    /// Its first token was late enough to send a hedge: counted, never ejecting by itself.
    Late,
    /// A late attempt counted already was beaten by its hedge: ejects when the run is long
    /// enough, without counting the attempt twice.
    LateConfirmed,
}

/// What recording a failure did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ejection {
    /// The region is ejected for this long (for the decision).
    Ejected {
        /// How long: `base_ejection` times its ejections in a row, at most `max_ejection`.
        length: Duration,
        /// The failures in a row that ejected it.
        failures: u32,
    },
    /// It would have been, but as many regions as may be are ejected already.
    Capped,
}

/// Every region's record, behind one lock (taken only when an attempt ends and when a plan
/// asks about a region with a record).
#[derive(Debug)]
pub struct Outliers {
    config: OutlierConfig,
    regions: RwLock<HashMap<String, RegionHealth>>,
}

impl Outliers {
    /// Records of no region yet, with these settings.
    pub fn new(config: OutlierConfig) -> Self {
        Self {
            config,
            regions: RwLock::default(),
        }
    }

    fn regions(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, RegionHealth>> {
        self.regions.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The regions the router may call (the share of them ejected is bounded).
    pub fn know_regions<'r>(&self, regions: impl IntoIterator<Item = &'r str>) {
        let mut known = self.regions();
        for r in regions {
            if !known.contains_key(r) {
                known.insert(r.to_string(), RegionHealth::default());
            }
        }
    }

    /// An attempt in `region` succeeded: its run of failures ends.
    pub fn record_success(&self, region: &str) {
        if !self.config.enabled {
            return;
        }
        {
            // Nearly always: a known region without failures, under the shared lock.
            let regions = self.regions.read().unwrap_or_else(|p| p.into_inner());
            if regions.get(region).is_some_and(|h| h.consecutive == 0) {
                return;
            }
        }
        let mut regions = self.regions();
        match regions.get_mut(region) {
            Some(h) => h.consecutive = 0,
            None => {
                regions.insert(region.to_string(), RegionHealth::default());
            }
        }
    }

    /// What an attempt in `region` showed at `now`; the region is ejected when a failure (not
    /// a late first token alone) makes `consecutive_failures` in a row and the share of regions
    /// ejected allows it.
    pub fn record_failure(
        &self,
        now: Instant,
        region: &str,
        evidence: Evidence,
    ) -> Option<Ejection> {
        let c = &self.config;
        if !c.enabled {
            return None;
        }
        let mut regions = self.regions();
        let known = regions.len() + usize::from(!regions.contains_key(region));
        let ejected_now = regions
            .iter()
            .filter(|(r, h)| *r != region && h.ejected_until.is_some_and(|u| u > now))
            .count();
        let h = regions.entry(region.to_string()).or_default();
        if h.ejected_until.is_some_and(|u| u > now) {
            return None; // attempts sent before the ejection, ending now
        }
        if evidence != Evidence::LateConfirmed {
            h.consecutive += 1;
        }
        if evidence == Evidence::Late || h.consecutive < c.consecutive_failures {
            return None;
        }
        // Never every region: a fault everywhere is not an outlier.
        let allowed = ((known as f64 * c.max_ejected_share).floor() as usize)
            .max(1)
            .min(known.saturating_sub(1));
        if ejected_now >= allowed {
            return Some(Ejection::Capped);
        }
        // A region healthy for the longest ejection since its last one starts again.
        let healed = h
            .ejected_until
            .is_some_and(|u| now.saturating_duration_since(u) >= c.max_ejection);
        if healed {
            h.ejections = 0;
        }
        h.ejections += 1;
        let length = c
            .base_ejection
            .saturating_mul(h.ejections)
            .min(c.max_ejection);
        h.ejected_until = Some(now + length);
        let failures = std::mem::take(&mut h.consecutive);
        Some(Ejection::Ejected { length, failures })
    }

    /// Another process ejected `region` until `until` (a replica of the fleet, or this
    /// process's previous run): if this router calls it, it is ejected here too, for what is
    /// left of that period, when the share of regions ejected allows (`max_ejected_share`, as
    /// for its own ejections). Whether it is ejected now.
    pub fn adopt(&self, now: Instant, region: &str, until: Instant) -> bool {
        let c = &self.config;
        if !c.enabled || until <= now {
            return false;
        }
        let mut regions = self.regions();
        // A region this router does not call is none of its business (and counted, it would
        // raise the share of its own regions that may be ejected).
        if !regions.contains_key(region) {
            return false;
        }
        let known = regions.len();
        let ejected_now = regions
            .iter()
            .filter(|(r, h)| *r != region && h.ejected_until.is_some_and(|u| u > now))
            .count();
        let h = regions.get_mut(region).expect("checked above");
        if h.ejected_until.is_some_and(|u| u >= until) {
            return true;
        }
        let allowed = ((known as f64 * c.max_ejected_share).floor() as usize)
            .max(1)
            .min(known.saturating_sub(1));
        if ejected_now >= allowed {
            return false;
        }
        h.ejected_until = Some(until);
        h.consecutive = 0;
        true
    }

    /// Every region known, ejected or not.
    pub fn known(&self) -> Vec<String> {
        self.regions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .keys()
            .cloned()
            .collect()
    }

    /// The regions ejected at `now`, each with until when.
    pub fn ejected(&self, now: Instant) -> Vec<(String, Instant)> {
        self.regions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter_map(|(r, h)| Some((r.clone(), h.ejected_until.filter(|u| *u > now)?)))
            .collect()
    }

    /// Whether `region` is ejected at `now`.
    pub fn is_ejected(&self, now: Instant, region: &str) -> bool {
        if !self.config.enabled {
            return false;
        }
        self.regions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(region)
            .and_then(|h| h.ejected_until)
            .is_some_and(|u| u > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outliers() -> Outliers {
        Outliers::new(OutlierConfig::default())
    }

    #[test]
    fn failures_in_a_row_eject_a_region_and_a_success_between_them_does_not() {
        let o = outliers();
        let now = crate::time::now();
        o.know_regions(["us-east-1", "us-west-2", "eu-west-1"]);
        o.record_failure(now, "us-east-1", Evidence::Failed);
        o.record_failure(now, "us-east-1", Evidence::Failed);
        o.record_success("us-east-1");
        o.record_failure(now, "us-east-1", Evidence::Failed);
        o.record_failure(now, "us-east-1", Evidence::Failed);
        assert!(!o.is_ejected(now, "us-east-1"));
        let third = o.record_failure(now, "us-east-1", Evidence::Failed);
        let base = OutlierConfig::default().base_ejection;
        assert_eq!(
            third,
            Some(Ejection::Ejected {
                length: base,
                failures: 3
            })
        );
        assert!(o.is_ejected(now, "us-east-1"));
        assert!(!o.is_ejected(now + base, "us-east-1"));
        // Back, and failing again at once: ejected for twice as long.
        let later = now + base;
        for _ in 0..2 {
            o.record_failure(later, "us-east-1", Evidence::Failed);
        }
        assert_eq!(
            o.record_failure(later, "us-east-1", Evidence::Failed),
            Some(Ejection::Ejected {
                length: base * 2,
                failures: 3
            })
        );
    }

    #[test]
    fn at_most_the_allowed_share_of_regions_is_ejected_never_all() {
        let o = outliers();
        let now = crate::time::now();
        let regions = ["us-east-1", "us-west-2", "eu-west-1"];
        o.know_regions(regions);
        let mut outcomes = Vec::new();
        for r in regions {
            for _ in 0..3 {
                if let Some(e) = o.record_failure(now, r, Evidence::Failed) {
                    outcomes.push(e);
                }
            }
        }
        let ejected = regions.iter().filter(|r| o.is_ejected(now, r)).count();
        assert_eq!(ejected, 1, "half of three regions, rounded down");
        assert_eq!(
            outcomes.iter().filter(|e| **e == Ejection::Capped).count(),
            2
        );
        // One region alone is never ejected.
        let lone = outliers();
        for _ in 0..10 {
            lone.record_failure(now, "us-east-1", Evidence::Failed);
        }
        assert!(!lone.is_ejected(now, "us-east-1"));
    }

    #[test]
    fn an_ejection_adopted_from_elsewhere_lasts_its_period_within_the_share() {
        let o = outliers();
        let now = crate::time::now();
        o.know_regions(["us-east-1", "us-west-2", "eu-west-1"]);
        let until = now + Duration::from_secs(20);
        assert!(o.adopt(now, "us-east-1", until));
        assert!(o.is_ejected(now, "us-east-1"));
        assert!(!o.is_ejected(until, "us-east-1"));
        assert_eq!(o.ejected(now), vec![("us-east-1".to_string(), until)]);
        // One of three may be ejected at once: a second is refused, and one already over is.
        assert!(!o.adopt(now, "us-west-2", until));
        assert!(!o.adopt(now, "eu-west-1", now));
        assert!(!o.is_ejected(now, "us-west-2"));
        // A region this router does not call: not taken in, not counted.
        assert!(!o.adopt(now, "ap-south-1", until));
        assert!(!o.is_ejected(now, "ap-south-1"));
        assert_eq!(o.ejected(now).len(), 1);
    }

    #[test]
    fn late_first_tokens_eject_only_once_a_failure_confirms_them() {
        let o = outliers();
        let now = crate::time::now();
        o.know_regions(["us-east-1", "us-west-2"]);
        // A load spike: many late first tokens at once, then their attempts answer.
        for _ in 0..10 {
            assert_eq!(o.record_failure(now, "us-east-1", Evidence::Late), None);
        }
        assert!(!o.is_ejected(now, "us-east-1"));
        o.record_success("us-east-1");
        assert_eq!(
            o.record_failure(now, "us-east-1", Evidence::LateConfirmed),
            None
        );
        assert!(!o.is_ejected(now, "us-east-1"));
        // A stall: late first tokens pile up, and the first hedge answering ejects at once.
        for _ in 0..3 {
            o.record_failure(now, "us-east-1", Evidence::Late);
        }
        let confirmed = o.record_failure(now, "us-east-1", Evidence::LateConfirmed);
        assert!(
            matches!(confirmed, Some(Ejection::Ejected { failures: 3, .. })),
            "{confirmed:?}"
        );
        assert!(o.is_ejected(now, "us-east-1"));
    }
}
