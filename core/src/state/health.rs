//! Target health: each target's breaker and latency track (one lock per target), what
//! calls to it teach them (successes, cuts, failures, refusals, probes), and the region-level
//! outlier detection beside them.

use std::sync::{Arc, RwLock};

use super::{
    AttemptSpeed, Breaker, BreakerConfig, BreakerView, Duration, HashMap, Instant, LatencyTrack,
    Mutex, Observed, ServiceTier, known, locked, outlier, shared,
};
use crate::config::Config;
use crate::types::{Api, Provider, Target};

/// Target health: each target's breaker and latency track (one lock per target), the
/// region-level outlier detection beside them, what other processes knew of the targets, and
/// the providers that have answered; with shared state, the fleet's breakers and ejections.
pub struct Health {
    pub(super) breaker: BreakerConfig,
    pub(super) targets: RwLock<TargetMap>,
    /// Regions ejected for stalling or failing (`routing.outlier`).
    pub(super) outliers: outlier::Outliers,
    /// Targets' latency as other processes knew it (the fleet, or this process's last run).
    pub(super) known: known::Known,
    /// The providers' APIs that have answered this router: its credentials are good there.
    answered_by: RwLock<Vec<(Provider, Api)>>,
    /// Whether any target has refused to stream: until one has, asking costs no lock (every
    /// attempt asks).
    any_refuses_streaming: std::sync::atomic::AtomicBool,
    pub(super) shared: Option<Arc<shared::Shared>>,
}

/// What a target's time limits are learnt from: a quantile of its recent first-token times
/// (less what their input took to read) and of its streams' longest gaps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LearnedLatency {
    /// The first-token quantile, net of input reading; `None` before the target has any.
    pub ttft: Option<Observed>,
    /// The longest-gap quantile of the target's streams; `None` before any stream has ended
    /// there.
    pub gap: Option<Observed>,
}

#[derive(Debug, Default)]
pub(super) struct TargetState {
    pub(super) breaker: Breaker,
    pub(super) latency: LatencyTrack,
    /// A target that refused to stream: sent whole from then on.
    pub(super) refuses_streaming: bool,
}

/// Targets by region, then id, then tier: nested so that lookups by `&str` allocate nothing.
/// Each target has its own lock, so that calls to different targets never wait on each other;
/// the map's own lock is taken for writing only when a target is seen for the first time.
///
/// foldhash rather than SipHash: the keys come from configuration, not from callers, and these
/// maps are read for every candidate of every call.
pub(super) type TargetMap =
    HashMap<String, HashMap<String, HashMap<Option<ServiceTier>, Mutex<TargetState>>>>;

pub(super) fn lookup<'m>(
    map: &'m TargetMap,
    region: &str,
    id: &str,
    tier: Option<ServiceTier>,
) -> Option<&'m Mutex<TargetState>> {
    map.get(region)?.get(id)?.get(&tier)
}

pub(super) fn insert(map: &mut TargetMap, region: &str, id: &str, tier: Option<ServiceTier>) {
    if !map.contains_key(region) {
        map.insert(region.to_string(), HashMap::default());
    }
    let ids = map.get_mut(region).expect("inserted above");
    if !ids.contains_key(id) {
        ids.insert(id.to_string(), HashMap::default());
    }
    ids.get_mut(id)
        .expect("inserted above")
        .entry(tier)
        .or_default();
}

impl Health {
    pub(super) fn new(config: &Config) -> Self {
        Self {
            breaker: config.routing.breaker,
            targets: RwLock::default(),
            outliers: outlier::Outliers::new(config.routing.outlier),
            known: known::Known::default(),
            answered_by: RwLock::default(),
            any_refuses_streaming: std::sync::atomic::AtomicBool::new(false),
            shared: None,
        }
    }

    pub(super) fn with_target<R>(
        &self,
        region: &str,
        id: &str,
        tier: Option<ServiceTier>,
        f: impl FnOnce(&mut TargetState) -> R,
    ) -> R {
        {
            let targets = self.targets.read().unwrap_or_else(|p| p.into_inner());
            if let Some(t) = lookup(&targets, region, id, tier) {
                let mut t = locked(t);
                return f(&mut t);
            }
        }
        let mut targets = self.targets.write().unwrap_or_else(|p| p.into_inner());
        insert(&mut targets, region, id, tier);
        let mut t = locked(lookup(&targets, region, id, tier).expect("inserted above"));
        let out = f(&mut t);
        drop(t);
        out
    }

    /// Admits an attempt through the target's breaker: `Some(is_probe)`, or `None` if open.
    pub fn admit(
        &self,
        now: Instant,
        region: &str,
        id: &str,
        tier: Option<ServiceTier>,
    ) -> Option<bool> {
        let config = self.breaker;
        if let Some(sh) = &self.shared {
            match sh.remote_breaker(&shared::target_key(region, id, tier)) {
                Some(shared::RemoteBreaker::Open) => return None,
                // Another replica's breaker ran out: a probe, if this call gets the lease.
                Some(shared::RemoteBreaker::Probing) => {
                    return self
                        .with_target(region, id, tier, |t| t.breaker.admit(now, &config))
                        .map(|_| true);
                }
                // The fleet has no open breaker here. If this replica's own breaker is probing
                // and another replica's probe closed the target, it closes too; if the entry is
                // just missing (Redis restarted empty), it keeps to its own probe.
                None if sh.usable() => {
                    let closed = sh.take_closed_by_fleet(&shared::target_key(region, id, tier));
                    return self.with_target(region, id, tier, |t| {
                        if closed
                            && matches!(t.breaker.view(now, &config), BreakerView::HalfOpen { .. })
                        {
                            t.breaker.on_success();
                        }
                        t.breaker.admit(now, &config)
                    });
                }
                None => {}
            }
        }
        self.with_target(region, id, tier, |t| t.breaker.admit(now, &config))
    }

    /// Whether a probe of this target may go: with shared state, only the replica holding the
    /// fleet-wide lease probes (for the breaker's open period); without, always.
    pub async fn take_probe_lease(
        &self,
        region: &str,
        id: &str,
        tier: Option<ServiceTier>,
    ) -> bool {
        match &self.shared {
            Some(sh) => {
                // Boxed, as every Redis call on a call's path: only shared state pays its size.
                Box::pin(
                    sh.take_probe_lease(
                        &shared::target_key(region, id, tier),
                        self.breaker.open_for,
                    ),
                )
                .await
            }
            None => true,
        }
    }

    /// An attempt sent at `tier` succeeded, served at `served` (the tier the response
    /// reported), with the speed it showed: the breaker of what was sent closes; the samples
    /// of the learnt limits and hedge delay are the sent tier's (the next attempt sent so meets
    /// them), the moving averages the served tier's.
    pub fn record_success(
        &self,
        region: &str,
        id: &str,
        tier: Option<ServiceTier>,
        served: Option<ServiceTier>,
        speed: &AttemptSpeed,
    ) {
        if let Some(sh) = &self.shared {
            sh.publish_closed(shared::target_key(region, id, tier));
        }
        self.with_target(region, id, tier, |t| {
            t.breaker.on_success();
            t.latency.clear_throttles();
            t.latency.record_samples(speed);
            if served == tier {
                t.latency.record_averages(speed);
            }
        });
        if served != tier {
            self.with_target(region, id, served, |t| t.latency.record_averages(speed));
        }
        self.outliers.record_success(region);
    }

    /// An attempt was cut by its learnt `limit` after `waited` (the learnt part of the limit):
    /// the window its limits are learnt from takes that in, so a target that slowed down gets
    /// a longer limit next time instead of being cut for good.
    pub fn record_cut(
        &self,
        region: &str,
        id: &str,
        tier: Option<ServiceTier>,
        limit: crate::types::TimeLimit,
        waited: Duration,
    ) {
        use crate::types::TimeLimit as L;
        self.with_target(region, id, tier, |t| match limit {
            L::FirstToken | L::Answer => t.latency.record_first_token_cut(waited),
            L::Idle => t.latency.record_gap_cut(waited),
            L::Deadline => {}
        });
    }

    /// The regions the router may call: at most `routing.outlier.max_ejected_share` of them
    /// are ejected at once.
    pub fn know_regions<'r>(&self, regions: impl IntoIterator<Item = &'r str>) {
        self.outliers.know_regions(regions);
    }

    /// An attempt in `region` stalled, reset, timed out or met a server error, or had no first
    /// token at its hedge delay: it counts toward ejecting the region (`routing.outlier`).
    pub fn record_regional_failure(
        &self,
        now: Instant,
        region: &str,
        evidence: outlier::Evidence,
    ) -> Option<outlier::Ejection> {
        let verdict = self.outliers.record_failure(now, region, evidence);
        if let Some(outlier::Ejection::Ejected { length, failures }) = verdict {
            tracing::warn!(
                region,
                failures,
                for_ms = u64::try_from(length.as_millis()).unwrap_or(u64::MAX),
                "region ejected: calls go to the other regions until it is due back"
            );
        }
        if let (Some(outlier::Ejection::Ejected { length, .. }), Some(sh)) = (verdict, &self.shared)
        {
            // The fleet ejects it too, for the same period.
            let until = shared::unix_ms()
                .saturating_add(u64::try_from(length.as_millis()).unwrap_or(u64::MAX));
            sh.publish_ejection(region, until);
        }
        verdict
    }

    /// An attempt failed in a way that counts against the target.
    pub fn record_failure(
        &self,
        now: Instant,
        region: &str,
        id: &str,
        tier: Option<ServiceTier>,
        throttled: bool,
    ) {
        let config = self.breaker;
        let opened = self.with_target(region, id, tier, |t| {
            let before = t.breaker.view(now, &config);
            t.breaker.on_failure(now, &config);
            if throttled {
                t.latency.record_throttle(now);
            }
            before != BreakerView::Open && t.breaker.view(now, &config) == BreakerView::Open
        });
        if opened {
            tracing::warn!(
                region,
                target = id,
                tier = tier.map_or("", |t| t.as_str()),
                open_ms = u64::try_from(config.open_for.as_millis()).unwrap_or(u64::MAX),
                "breaker opened: the target is skipped until a probe succeeds"
            );
        }
        if let Some(sh) = &self.shared {
            let key = shared::target_key(region, id, tier);
            // A failed probe of the fleet's breaker opens it again for everyone.
            if opened || sh.remote_breaker(&key).is_some() {
                sh.publish_open(key, config.open_for);
            }
        }
    }

    /// A target refused an attempt for capacity that its concurrency limit now accounts for
    /// ([`Headroom`](super::load::Headroom)): it counts toward the target's throttle score, so that plans
    /// rank it after targets with room for a while, and not toward its breaker: it is full,
    /// not failing.
    pub fn record_throttle(&self, now: Instant, region: &str, id: &str, tier: Option<ServiceTier>) {
        self.with_target(region, id, tier, |t| t.latency.record_throttle(now));
    }

    /// A target refused access (a model not enabled in its region): its breaker opens at once
    /// for `routing.breaker.access_denied_for`, fleet-wide with shared state.
    pub fn record_refusal(&self, now: Instant, region: &str, id: &str, tier: Option<ServiceTier>) {
        let length = self.breaker.access_denied_for;
        self.with_target(region, id, tier, |t| t.breaker.open_for(now, length));
        if let Some(sh) = &self.shared {
            sh.publish_open(shared::target_key(region, id, tier), length);
        }
    }

    /// `target` answered: the router's credentials are good with its provider's API (each
    /// API authenticates its own way: SigV4 for Converse, a Bedrock API key may serve the
    /// OpenAI-compatible ones).
    pub fn record_answered(&self, target: &Target) {
        if self.answered(target) {
            return;
        }
        let mut answered = self.answered_by.write().unwrap_or_else(|p| p.into_inner());
        if !answered
            .iter()
            .any(|(p, a)| *p == target.provider && *a == target.api)
        {
            answered.push((target.provider.clone(), target.api));
        }
    }

    /// Whether any target of `target`'s provider and API has answered this router: a refusal
    /// of its credentials by one target is then that target's (a region not enabled for the
    /// account), not the credentials'.
    pub fn answered(&self, target: &Target) -> bool {
        let answered = self.answered_by.read().unwrap_or_else(|p| p.into_inner());
        answered
            .iter()
            .any(|(p, a)| *p == target.provider && *a == target.api)
    }

    /// An attempt ended without a verdict on the target (cancelled): a probe slot is freed.
    pub fn release_probe(&self, region: &str, id: &str, tier: Option<ServiceTier>) {
        self.with_target(region, id, tier, |t| t.breaker.release_probe());
    }

    /// What a target's time limits at `tier` are learnt from: the `q` quantile of its recent
    /// first-token times, net of their input at `prefill_tokens_per_second`, and of its
    /// streams' longest gaps, each with its count.
    pub fn learned_latency(
        &self,
        region: &str,
        id: &str,
        tier: Option<ServiceTier>,
        q: f64,
        prefill_tokens_per_second: f64,
    ) -> LearnedLatency {
        self.with_target(region, id, tier, |t| LearnedLatency {
            ttft: t.latency.first_token_quantile(q, prefill_tokens_per_second),
            gap: t.latency.gap_quantile(q),
        })
    }

    /// A target refused to stream (its backend said so): its calls are sent whole from now on.
    pub fn record_refuses_streaming(&self, region: &str, endpoint: &str) {
        self.with_target(region, endpoint, None, |t| t.refuses_streaming = true);
        self.any_refuses_streaming
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether a target has refused to stream.
    pub fn refuses_streaming(&self, region: &str, endpoint: &str) -> bool {
        if !self
            .any_refuses_streaming
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            return false;
        }
        let targets = self.targets.read().unwrap_or_else(|p| p.into_inner());
        lookup(&targets, region, endpoint, None).is_some_and(|t| locked(t).refuses_streaming)
    }

    /// A quantile of a target's recent first-token times (attempts cut by a limit left out),
    /// and how many it is of, if any were seen.
    pub fn ttft_quantile(
        &self,
        region: &str,
        id: &str,
        tier: Option<ServiceTier>,
        q: f64,
    ) -> Option<(Duration, usize)> {
        self.with_target(region, id, tier, |t| t.latency.ttft_quantile(q))
    }
}
