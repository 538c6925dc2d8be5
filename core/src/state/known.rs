//! What other processes learnt: targets' latency in brief and ejected regions, passed on by
//! the fleet's replicas through Redis (`shared/latency.rs`) or by this process's previous run
//! through a file (`saved.rs`), so that a new replica or a fresh process starts from what is
//! known instead of its model's prior.

use super::{Duration, HashMap, Health, Instant, RwLock, Serialize, ServiceTier, locked, shared};
use crate::config::LearnedLimits;

/// Most targets one process passes on: the most observed first.
pub const MAX_SUMMARIES: usize = 256;

/// A target's latency in brief, as another process passes it on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct LatencySummary {
    /// The quantile of first-token times its limits are learnt from, net of input
    /// (`routing.timeouts.learned.quantile`), in milliseconds.
    pub first_token_ms: u64,
    /// The quantile of first-token times a hedge waits for (`routing.hedge.standard_quantile`),
    /// in milliseconds, if any attempt there was not cut.
    #[serde(default)]
    pub hedge_ms: Option<u64>,
    /// The quantile of its streams' longest gaps, in milliseconds, if a stream ended there.
    #[serde(default)]
    pub gap_ms: Option<u64>,
    /// How many first tokens the figures are of.
    pub samples: u32,
    /// When they were taken (unix milliseconds).
    pub at_ms: u64,
}

impl LatencySummary {
    /// Whether it was taken less than `max_age` before `now_ms` (and not in the future of a
    /// clock that went back).
    pub fn is_fresh(&self, now_ms: u64, max_age: Duration) -> bool {
        let age = now_ms.saturating_sub(self.at_ms);
        age < u64::try_from(max_age.as_millis()).unwrap_or(u64::MAX)
    }
}

/// Summaries of targets known from elsewhere, by target key (`region|id|tier`), each with
/// when it goes stale (unix milliseconds).
#[derive(Debug, Default)]
pub(super) struct Known {
    by_target: RwLock<HashMap<String, (LatencySummary, u64)>>,
}

impl Health {
    /// This process's targets in brief: each target with first tokens observed, at most
    /// [`MAX_SUMMARIES`] of them (the most observed), as of `now_ms`, each dated by its newest
    /// observation.
    pub fn latency_summaries(
        &self,
        learned: &LearnedLimits,
        hedge_quantile: f64,
        now_ms: u64,
    ) -> Vec<(String, LatencySummary)> {
        let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let targets = self.targets.read().unwrap_or_else(|p| p.into_inner());
        let mut out = Vec::new();
        for (region, ids) in targets.iter() {
            for (id, tiers) in ids {
                for (tier, cell) in tiers {
                    let t = locked(cell);
                    let Some(first) = t
                        .latency
                        .first_token_quantile(learned.quantile, learned.prefill_tokens_per_second)
                    else {
                        continue;
                    };
                    // As old as the target's newest observation, not as the summary.
                    let age = t.latency.last_sample_at().map_or(Duration::ZERO, |at| {
                        crate::time::now().saturating_duration_since(at)
                    });
                    let at_ms =
                        now_ms.saturating_sub(u64::try_from(age.as_millis()).unwrap_or(u64::MAX));
                    out.push((
                        shared::target_key(region, id, *tier),
                        LatencySummary {
                            first_token_ms: millis(first.quantile),
                            hedge_ms: t
                                .latency
                                .ttft_quantile(hedge_quantile)
                                .map(|(d, _)| millis(d)),
                            gap_ms: t
                                .latency
                                .gap_quantile(learned.quantile)
                                .map(|g| millis(g.quantile)),
                            samples: u32::try_from(first.samples).unwrap_or(u32::MAX),
                            at_ms,
                        },
                    ));
                }
            }
        }
        out.sort_unstable_by(|a, b| b.1.samples.cmp(&a.1.samples).then_with(|| a.0.cmp(&b.0)));
        out.truncate(MAX_SUMMARIES);
        out
    }

    /// Takes in summaries from elsewhere, each read as current until `max_age` after it was
    /// taken: each replaces an older one of the same target; beyond [`MAX_SUMMARIES`] x 4, the
    /// stalest go.
    pub fn adopt_summaries(
        &self,
        summaries: impl IntoIterator<Item = (String, LatencySummary)>,
        max_age: Duration,
    ) {
        let age = u64::try_from(max_age.as_millis()).unwrap_or(u64::MAX);
        let mut known = self
            .known
            .by_target
            .write()
            .unwrap_or_else(|p| p.into_inner());
        for (key, s) in summaries {
            match known.get(&key) {
                Some((old, _)) if old.at_ms >= s.at_ms => {}
                _ => {
                    known.insert(key, (s, s.at_ms.saturating_add(age)));
                }
            }
        }
        let cap = MAX_SUMMARIES * 4;
        if known.len() > cap {
            let mut stalest: Vec<(u64, String)> = known
                .iter()
                .map(|(k, (_, until))| (*until, k.clone()))
                .collect();
            stalest.sort_unstable();
            let excess = known.len() - cap;
            for (_, key) in stalest.into_iter().take(excess) {
                known.remove(&key);
            }
        }
    }

    /// What another process knew of a target, if anything still current.
    pub fn known_latency(
        &self,
        region: &str,
        id: &str,
        tier: Option<ServiceTier>,
    ) -> Option<LatencySummary> {
        let known = self
            .known
            .by_target
            .read()
            .unwrap_or_else(|p| p.into_inner());
        if known.is_empty() {
            return None;
        }
        let (s, until) = known.get(&shared::target_key(region, id, tier))?;
        (*until > shared::unix_ms()).then_some(*s)
    }

    /// Every summary known from elsewhere and still current.
    pub fn known_summaries(&self) -> Vec<(String, LatencySummary)> {
        let now = shared::unix_ms();
        let known = self
            .known
            .by_target
            .read()
            .unwrap_or_else(|p| p.into_inner());
        known
            .iter()
            .filter(|(_, (_, until))| *until > now)
            .map(|(k, (s, _))| (k.clone(), *s))
            .collect()
    }

    /// The regions ejected now, each with until when (unix milliseconds).
    pub fn ejections_unix(&self, now: Instant, now_ms: u64) -> Vec<(String, u64)> {
        self.outliers
            .ejected(now)
            .into_iter()
            .map(|(region, until)| {
                let left = u64::try_from(until.saturating_duration_since(now).as_millis())
                    .unwrap_or(u64::MAX);
                (region, now_ms.saturating_add(left))
            })
            .collect()
    }

    /// Another process ejected `region` until `until_ms` (unix milliseconds): ejected here too
    /// for what is left of it, within the share of regions that may be ejected at once.
    pub fn adopt_ejection(&self, now: Instant, now_ms: u64, region: &str, until_ms: u64) -> bool {
        let Some(left) = until_ms.checked_sub(now_ms).filter(|l| *l > 0) else {
            return false;
        };
        let Some(until) = now.checked_add(Duration::from_millis(left)) else {
            return false;
        };
        self.outliers.adopt(now, region, until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::AttemptSpeed;

    #[test]
    fn a_targets_summary_carries_its_quantiles_and_the_most_observed_come_first() {
        let config = crate::config::Config::default();
        let state = Health::new(&config);
        let learned = config.routing.timeouts.learned;
        for (id, n) in [("a", 3), ("b", 30)] {
            for _ in 0..n {
                let speed = AttemptSpeed {
                    ttft: Some(Duration::from_millis(200)),
                    longest_gap: Some(Duration::from_millis(40)),
                    ..AttemptSpeed::default()
                };
                state.record_success("us-east-1", id, None, None, &speed);
            }
        }
        let now_ms = shared::unix_ms();
        let all = state.latency_summaries(&learned, 0.95, now_ms);
        assert_eq!(all[0].0, "us-east-1|b|");
        assert_eq!(
            all[0].1,
            LatencySummary {
                first_token_ms: 200,
                hedge_ms: Some(200),
                gap_ms: Some(40),
                samples: 30,
                at_ms: now_ms
            }
        );
        // Taken in by another process: the newer summary of a target wins.
        let other = Health::new(&config);
        let mut older = all[0].1;
        older.at_ms = now_ms - 500;
        older.first_token_ms = 9_000;
        let hour = Duration::from_secs(3600);
        other.adopt_summaries(all.clone(), hour);
        other.adopt_summaries([(all[0].0.clone(), older)], hour);
        assert_eq!(other.known_latency("us-east-1", "b", None), Some(all[0].1));
        assert_eq!(other.known_latency("us-east-1", "c", None), None);
        // Past its age, it is no longer read.
        let gone = Health::new(&config);
        let mut old = all[0].1;
        old.at_ms = now_ms - 7_200_000;
        gone.adopt_summaries([(all[0].0.clone(), old)], hour);
        assert_eq!(gone.known_latency("us-east-1", "b", None), None);
    }
}
