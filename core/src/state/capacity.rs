//! Reservations and quotas: admitting a call against its model's reservation and its
//! target's on-demand quota, in this process or the fleet's count in Redis, and settling both
//! when it ends.

use std::sync::{Arc, Mutex};

use super::{Duration, HashMap, Instant, Ledger, ReservationConfig, Ticket, load, quota, shared};
use crate::config::Config;

/// Capacity: reservations' ledgers, on-demand quotas and each target's concurrency, in this
/// process or (with shared state) counted by the fleet in Redis.
pub struct Capacity {
    pub(super) ledgers: Mutex<HashMap<String, Ledger>>,
    /// Each replica's share of every reservation, used while Redis is unreachable.
    fallback_ledgers: Mutex<HashMap<String, Ledger>>,
    /// Reservations found full (by the service's served tier, or the fleet's ledger), and until
    /// when to assume they still are.
    pub(super) full_until: Mutex<HashMap<String, Instant>>,
    /// What this router admitted against each target's on-demand quota.
    pub(super) quotas: quota::QuotaBook,
    /// Each target's attempts in flight against its concurrency, and calls waiting for a slot.
    pub(super) headroom: Arc<load::Headroom>,
    /// How long after a throttle a learnt limit is held before it grows again.
    probe_after: Duration,
    minute: Duration,
    shared: Option<Arc<shared::Shared>>,
}

/// A call admitted against a reservation, to correct or release when it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReservationTicket {
    /// In this process's ledger (no shared state configured).
    Local(Ticket),
    /// In this process's share of the reservation, while Redis was unreachable.
    Fallback(Ticket),
    /// In the fleet's ledger in Redis.
    Shared(shared::SharedTicket),
}

/// How long a full shared reservation (or quota) is assumed full without asking Redis again.
pub(super) const FULL_HINT: Duration = Duration::from_millis(100);

/// A request's admission against a target's on-demand quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaClaim {
    /// In this process's quota book.
    Local(quota::QuotaTicket),
    /// In the fleet's count in Redis.
    Shared(shared::SharedTicket),
}

/// The key of a target's quota in the fleet's state (and in the "found full" hints).
pub(super) fn quota_key(region: &str, target: &str) -> String {
    format!("quota|{region}|{target}")
}

/// Requests and tokens in the fleet ledger's terms: ((requests, tokens), capacity). A limit
/// not set counts nothing against a capacity of one.
pub(super) fn shared_quota_terms(
    limits: (u64, u64),
    counts: (u64, u64),
) -> ((u64, u64), (u64, u64)) {
    let term = |limit: u64, n: u64| {
        if limit == u64::MAX {
            (0, 1)
        } else {
            (n, limit)
        }
    };
    let (r, rc) = term(limits.0, counts.0);
    let (t, tc) = term(limits.1, counts.1);
    ((r, t), (rc, tc))
}

impl Capacity {
    pub(super) fn new(config: &Config) -> Self {
        let ledgers = config
            .models
            .iter()
            .filter_map(|(id, m)| {
                m.reserved()
                    .map(|r| (id.clone(), Ledger::new(*r, config.routing.minute)))
            })
            .collect();
        Self {
            ledgers: Mutex::new(ledgers),
            fallback_ledgers: Mutex::default(),
            full_until: Mutex::default(),
            quotas: quota::QuotaBook::new(config.routing.minute),
            headroom: Arc::new(load::Headroom::new(config.routing.concurrency)),
            probe_after: config.routing.concurrency.probe_after,
            minute: config.routing.minute,
            shared: None,
        }
    }

    /// Counts with the fleet through `shared`; while it is unreachable each replica admits
    /// `1 / replicas` of every reservation and its share of each target's concurrency.
    pub(super) fn share(&mut self, shared: &Arc<shared::Shared>, config: &Config) {
        let replicas = u64::from(shared.replicas.max(1));
        let fallback = config
            .models
            .iter()
            .filter_map(|(id, m)| {
                let r = m.reserved()?;
                let share = ReservationConfig {
                    input_tokens_per_minute: r.input_tokens_per_minute / replicas,
                    output_tokens_per_minute: r.output_tokens_per_minute / replicas,
                };
                Some((id.clone(), Ledger::new(share, self.minute)))
            })
            .collect();
        self.fallback_ledgers = Mutex::new(fallback);
        self.headroom.share_with_fleet(shared.replicas);
        spawn_lease_renewal(&self.headroom, shared, self.probe_after);
        self.shared = Some(Arc::clone(shared));
    }

    /// Each target's attempts in flight against its concurrency, and the calls waiting for a
    /// slot.
    pub fn headroom(&self) -> &load::Headroom {
        &self.headroom
    }

    /// Leases slots of a target from the fleet (with shared state: one Redis round trip,
    /// within `shared.timeout`; unanswered, this replica takes its share of its own limit).
    pub async fn lease_slots(&self, region: &str, id: &str, ask: shared::LeaseAsk) {
        let Some(sh) = &self.shared else {
            return;
        };
        let answer = if sh.usable() {
            sh.lease_slots(region, id, ask, self.probe_after, true)
                .await
        } else {
            None
        };
        self.headroom.leased(
            crate::time::now(),
            (region, id),
            ask,
            answer,
            sh.sync_interval,
        );
    }

    /// A throttle taught a target's limit: with shared state, the fleet learns it too.
    pub fn teach_limit(&self, region: &str, id: &str, lesson: shared::Lesson) {
        if let Some(sh) = &self.shared {
            sh.teach_limit(region, id, lesson);
        }
    }

    /// Admits a call booking `ask` (its two counts) against a target's per-minute quota `limits`:
    /// the fleet's count through Redis when shared state is configured and reachable, else
    /// this process's. `None` when it does not fit (unless `force`d: the last candidate goes
    /// anyway, and counts).
    pub async fn admit_quota(
        &self,
        now: Instant,
        region: &str,
        target: &str,
        limits: (u64, u64),
        ask: (u64, u64),
        force: bool,
    ) -> Option<QuotaClaim> {
        if let Some(sh) = self.shared.as_ref().filter(|sh| sh.usable()) {
            let key = quota_key(region, target);
            let (counted, capacity) = shared_quota_terms(limits, ask);
            match Box::pin(sh.reserve(&key, self.minute, capacity, counted.0, counted.1)).await {
                Some(Some(t)) => return Some(QuotaClaim::Shared(t)),
                Some(None) => {
                    self.full_until
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(key, now + FULL_HINT);
                    if !force {
                        return None;
                    }
                }
                None => sh.note_fallback(),
            }
        }
        self.quotas
            .admit(now, region, target, limits, ask, force)
            .map(QuotaClaim::Local)
    }

    /// Settles a quota admission on what the request used (nothing, when it was refused).
    pub fn settle_quota(
        &self,
        region: &str,
        target: &str,
        limits: (u64, u64),
        claim: QuotaClaim,
        used: (u64, u64),
    ) {
        match claim {
            QuotaClaim::Local(t) => self.quotas.settle(region, target, t, used),
            QuotaClaim::Shared(t) => {
                if let Some(sh) = &self.shared {
                    let (used, _) = shared_quota_terms(limits, used);
                    sh.settle(&quota_key(region, target), t, used.0, used.1);
                }
            }
        }
    }

    /// The service served a reserved call from the reservation: the ledger books its actual
    /// usage (also when the ledger had expected it to overflow) and forgets a "full" mark.
    pub fn reservation_served(
        &self,
        now: Instant,
        model: &str,
        ticket: Option<ReservationTicket>,
        input: u64,
        output: u64,
    ) {
        self.full_until
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(model);
        match ticket {
            Some(t) => self.correct_call(model, t, input, output),
            None if self.shared.is_none() => {
                if let Some(l) = self
                    .ledgers
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get_mut(model)
                {
                    l.record(now, input, output);
                }
            }
            // The fleet's ledger books what its replicas admitted; a call it refused and the
            // service served anyway only shows that the ledger was pessimistic.
            None => {}
        }
    }

    /// The service served a reserved call at standard: the reservation was full, whatever the
    /// ledger thought. Its estimate is released and the reservation is taken as full for a
    /// twelfth of the window (5 s of a minute), after which the next call finds out again.
    pub fn reservation_overflowed(
        &self,
        now: Instant,
        model: &str,
        ticket: Option<ReservationTicket>,
    ) {
        if let Some(t) = ticket {
            self.correct_call(model, t, 0, 0);
        }
        self.full_until
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(model.to_string(), now + self.minute / 12);
    }

    /// Admits a call against a model's reservation: the fleet's through Redis when shared
    /// state is configured and reachable, else this process's (its share, when Redis is down).
    pub async fn reserve_call(
        &self,
        now: Instant,
        model: &str,
        input: u64,
        output: u64,
    ) -> Option<ReservationTicket> {
        let Some(sh) = &self.shared else {
            return self
                .reserve(now, model, input, output)
                .map(ReservationTicket::Local);
        };
        let capacity = self
            .ledgers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(model)?
            .capacity();
        if sh.usable() {
            match Box::pin(sh.reserve(model, self.minute, capacity, input, output)).await {
                Some(Some(t)) => return Some(ReservationTicket::Shared(t)),
                Some(None) => {
                    self.full_until
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(model.to_string(), now + FULL_HINT);
                    return None;
                }
                None => {}
            }
        }
        sh.note_fallback();
        self.fallback_ledgers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(model)?
            .admit(now, input, output)
            .map(ReservationTicket::Fallback)
    }

    /// Replaces a reservation's estimate with actual usage.
    pub fn correct_call(&self, model: &str, ticket: ReservationTicket, input: u64, output: u64) {
        match ticket {
            ReservationTicket::Local(t) => self.correct_reservation(model, t, input, output),
            ReservationTicket::Fallback(t) => {
                if let Some(l) = self
                    .fallback_ledgers
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get_mut(model)
                {
                    l.correct(t, input, output);
                }
            }
            ReservationTicket::Shared(t) => {
                if let Some(sh) = &self.shared {
                    sh.settle(model, t, input, output);
                }
            }
        }
    }

    /// Admits a call against a model's reservation in this process's ledger.
    pub fn reserve(&self, now: Instant, model: &str, input: u64, output: u64) -> Option<Ticket> {
        self.ledgers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(model)?
            .admit(now, input, output)
    }

    /// Corrects a reservation with actual usage.
    pub fn correct_reservation(&self, model: &str, ticket: Ticket, input: u64, output: u64) {
        if let Some(l) = self
            .ledgers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(model)
        {
            l.correct(ticket, input, output);
        }
    }

    /// Releases a reservation the service did not serve.
    pub fn release_reservation(&self, model: &str, ticket: Ticket) {
        self.correct_reservation(model, ticket, 0, 0);
    }

    /// Tokens admitted against a model's reservation in the current window.
    pub fn reservation_used(&self, now: Instant, model: &str) -> Option<(u64, u64)> {
        self.ledgers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(model)
            .map(|l| l.used(now))
    }
}

/// Renews (or gives back) this replica's leases of targets' slots every `sync_interval`, off
/// the calls' path, while the router lives.
fn spawn_lease_renewal(
    headroom: &Arc<load::Headroom>,
    shared: &Arc<shared::Shared>,
    probe_after: Duration,
) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let (headroom, shared) = (Arc::downgrade(headroom), Arc::downgrade(shared));
    let every = shared
        .upgrade()
        .map_or(Duration::from_secs(1), |s| s.sync_interval);
    handle.spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let (Some(headroom), Some(shared)) = (headroom.upgrade(), shared.upgrade()) else {
                return;
            };
            if !shared.usable() {
                continue;
            }
            for (region, id, ask) in headroom.renewals(crate::time::now()) {
                let answer = shared
                    .lease_slots(&region, &id, ask, probe_after, false)
                    .await;
                headroom.leased(crate::time::now(), (&region, &id), ask, answer, every);
            }
        }
    });
}
