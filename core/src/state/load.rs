//! Headroom: each target's attempts in flight against its concurrency (configured, or learnt
//! from its throttles), and the line of calls waiting for a slot when every target a call may
//! use is full. A freed slot goes straight to the first waiter that can use it, in order of
//! class (interactive first) then deadline, so a newcomer never takes it from the line.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use foldhash::HashMap;
use tokio::sync::oneshot;

use super::shared::{LeaseAnswer, LeaseAsk, Lesson};
use crate::config::ConcurrencyConfig;
pub use crate::plan::observe::Load;
use crate::types::{ServiceTier, SloClass};

/// Which count of a target's concurrency an attempt is held to: Bedrock serves priority and
/// standard from one pool, and flex from a share of the same pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// Priority, standard, and every endpoint without tiers.
    Main,
    /// Flex: its own learnt limit, over the same count.
    Flex,
}

impl Lane {
    /// The lane of an attempt at `tier`; `None` for reserved capacity, which the reservation's
    /// ledger bounds instead.
    pub fn of(tier: Option<ServiceTier>) -> Option<Lane> {
        match tier {
            Some(ServiceTier::RESERVED) => None,
            Some(ServiceTier::FLEX) => Some(Lane::Flex),
            _ => Some(Lane::Main),
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One lane's limit: grown from the initial limit by one per success at it until the first
/// throttle ("slow start"), then held, lowered by throttles and raised by `1 / limit` per
/// success at it once the target has been quiet for `probe_after`.
#[derive(Debug, Clone, Copy)]
struct LaneLimit {
    value: f64,
    /// No throttle taught it yet (or the lesson was forgotten): it grows by one per success.
    probing: bool,
    /// Throttles until then answer the attempts sent with the one that taught the limit: each
    /// takes the limit down to what it saw, as the first did.
    lesson_until: Option<Instant>,
    /// A throttle with the limit in flight cut it by a tenth: those until then came from the
    /// same wave and cut no further.
    cut_until: Option<Instant>,
}

/// What is known of one target.
#[derive(Debug)]
struct TargetLoad {
    in_flight: u32,
    /// The model's `quota.max_concurrency`: a ceiling, and where a limit starts.
    configured: Option<u32>,
    /// Per lane (main, flex).
    lanes: [LaneLimit; 2],
    /// The last throttle.
    last_throttle: Option<Instant>,
    /// Recent answers and throttles (halving every [`RECENT`]): a target that answers more
    /// than it refuses is serving, and so cool.
    served: Decayed,
    refused: Decayed,
    /// Moving average of how long an attempt held its slot, in seconds.
    hold_s: Option<f64>,
    /// With shared state: the target's name, its slots this replica leased from the fleet
    /// (`None` until asked), the slots the other replicas hold, and until when the fleet had
    /// no more to give (no round trip on a call's path until then).
    fleet: Option<FleetShare>,
}

/// A target's slots as the fleet shares them (`[shared]`).
#[derive(Debug)]
struct FleetShare {
    region: String,
    id: String,
    lease: Option<u32>,
    others: u32,
    spent_until: Option<Instant>,
    /// A call is asking the fleet for more now (since then): the others wait for its answer
    /// in line rather than ask too.
    asked_at: Option<Instant>,
    /// The latest ask's number: an answer to an older one is stale.
    asks: u64,
}

/// How long an ask of the fleet keeps others from asking: longer than any answer takes (a
/// call cancelled while asking frees the way after it).
const ASKING: Duration = Duration::from_secs(1);

impl TargetLoad {
    fn new(configured: Option<u32>, initial: u32) -> Self {
        let start = LaneLimit {
            value: f64::from(configured.unwrap_or(initial).max(1)),
            probing: configured.is_none(),
            lesson_until: None,
            cut_until: None,
        };
        Self {
            in_flight: 0,
            configured,
            lanes: [start; 2],
            last_throttle: None,
            served: Decayed::default(),
            refused: Decayed::default(),
            hold_s: None,
            fleet: None,
        }
    }

    /// The other replicas' slots on it (none without shared state).
    fn others(&self) -> u32 {
        self.fleet.as_ref().map_or(0, |f| f.others)
    }

    /// The lane's limit: what throttles and successes taught, within the configured one.
    fn limit(&self, lane: Lane) -> u32 {
        let floor = |l: &LaneLimit| (l.value.floor().min(f64::from(u32::MAX)) as u32).max(1);
        let main = floor(&self.lanes[Lane::Main.index()]);
        let main = self.configured.map_or(main, |c| main.min(c.max(1)));
        match lane {
            Lane::Main => main,
            Lane::Flex => main.min(floor(&self.lanes[Lane::Flex.index()])),
        }
    }

    /// The most a call of `class` may have in flight on `lane` by the target's limit.
    fn limit_cap(&self, lane: Lane, class: SloClass, background_share: f64) -> u32 {
        // Shared, the limit is the fleet's: the others' slots come off it.
        let limit = self.limit(lane).saturating_sub(self.others()).max(1);
        match class {
            SloClass::Background | SloClass::Batch => {
                ((f64::from(limit) * background_share).floor() as u32).max(1)
            }
            SloClass::Interactive | SloClass::Standard => limit,
        }
    }

    /// The most a call of `class` may have in flight on `lane`: by the limit, and shared, by
    /// this replica's lease. Shared, without the floor of one slot: when the others hold the
    /// fleet's whole limit (a lesson came below what they had leased), this replica waits for
    /// their slots to come back rather than sending into a full target, where its waiting
    /// calls would meet a throttle each as fast as the target answers.
    fn cap(&self, lane: Lane, class: SloClass, background_share: f64) -> u32 {
        let Some(fleet) = &self.fleet else {
            return self.limit_cap(lane, class, background_share);
        };
        self.fleet_cap(lane, class, background_share)
            .min(fleet.lease.unwrap_or(0))
    }

    /// Shared, the most a call of `class` may have in flight on `lane` by the fleet's limit,
    /// less the other replicas' slots: none when they hold it all. Flex's own limit is not the
    /// fleet's (it grows only by flex successes here): a replica keeps a flex slot, or it could
    /// never learn it.
    fn fleet_cap(&self, lane: Lane, class: SloClass, background_share: f64) -> u32 {
        if lane == Lane::Flex {
            return self.limit_cap(lane, class, background_share);
        }
        let left = self.limit(lane).saturating_sub(self.others());
        match class {
            SloClass::Background | SloClass::Batch if left > 0 => {
                ((f64::from(left) * background_share).floor() as u32).max(1)
            }
            _ => left,
        }
    }

    /// Its load as plans see it: against its limit (shared, the fleet's, less the other
    /// replicas' slots: full when they hold it all, so that plans prefer a target with room),
    /// not this replica's lease, which a call leases more of when it needs.
    fn load(&self, lane: Lane, class: SloClass, background_share: f64) -> Load {
        let limit = match self.fleet {
            Some(_) => self.fleet_cap(lane, class, background_share),
            None => self.limit_cap(lane, class, background_share),
        };
        Load {
            in_flight: self.in_flight,
            limit: Some(limit),
            refusing: false,
        }
    }

    /// Whether an attempt of `class` may take a slot now: within the limit and, shared, this
    /// replica's lease.
    fn has_room(&self, lane: Lane, class: SloClass, background_share: f64) -> bool {
        self.in_flight < self.cap(lane, class, background_share)
    }

    /// A lease of what is in use and `more` slots, or, when `more` is `None`, a block more
    /// ([`Self::lease_block`]), so that a replica asks the fleet at most once per that many
    /// admissions. What it holds beyond the ask is given back at once (no
    /// admissions from it while the answer is on its way), and what it keeps is claimed as in
    /// use: the calls it admits before the answer comes are counted in the fleet's ledger.
    fn lease_ask(&mut self, replicas: u32, more: Option<u32>) -> LeaseAsk {
        let (limit, others) = (self.limit(Lane::Main), self.others());
        let want = self.in_flight + more.unwrap_or_else(|| self.lease_block(replicas));
        let mut claim = self.in_flight;
        let mut seq = 0;
        if let Some(fleet) = self.fleet.as_mut() {
            fleet.asks += 1;
            seq = fleet.asks;
            if let Some(lease) = fleet.lease.as_mut() {
                *lease = (*lease).min(want);
                claim = claim.max((*lease).min(limit.saturating_sub(others)));
            }
        }
        LeaseAsk {
            want,
            in_use: claim,
            limit,
            seq,
        }
    }

    /// Half this replica's fair share of the limit.
    fn lease_block(&self, replicas: u32) -> u32 {
        self.limit(Lane::Main).div_ceil(2 * replicas.max(1)).max(1)
    }

    /// Whether it refuses as such: lately it refused for capacity, with nothing else of ours in
    /// flight there, more often than it answered (refusals long past, under half of one, do
    /// not count).
    fn is_refusing(&self, now: Instant) -> bool {
        let refused = self.refused.at(now);
        refused >= 0.5 && refused > self.served.at(now)
    }

    /// Whether it is serving: it answered lately, at least as often as it refused.
    fn is_serving(&self, now: Instant) -> bool {
        let served = self.served.at(now);
        served >= 0.5 && self.refused.at(now) <= served
    }

    /// A throttle's lesson is forgotten after `forget_after` without another: the limit grows
    /// by one per success again, from where it is.
    fn refresh(&mut self, now: Instant, forget_after: Duration) {
        if self
            .last_throttle
            .is_some_and(|t| now.saturating_duration_since(t) >= forget_after)
        {
            for l in &mut self.lanes {
                l.probing = true;
            }
            self.last_throttle = None;
        }
    }
}

/// How fast a target's recent answers and refusals are forgotten: they halve every this long.
const RECENT: Duration = Duration::from_secs(2);

/// A count that halves every [`RECENT`].
#[derive(Debug, Clone, Copy, Default)]
struct Decayed {
    value: f64,
    at: Option<Instant>,
}

impl Decayed {
    fn at(&self, now: Instant) -> f64 {
        let Some(at) = self.at else {
            return 0.0;
        };
        let halvings = now.saturating_duration_since(at).as_secs_f64() / RECENT.as_secs_f64();
        self.value * 0.5f64.powf(halvings)
    }

    fn add(&mut self, now: Instant, n: f64) {
        self.value = self.at(now) + n;
        self.at = Some(now);
    }
}

/// A call waiting for a slot.
struct Waiter {
    /// The targets it may use (indices into the target table) and the lane of each.
    targets: Vec<(usize, Lane)>,
    class: SloClass,
    /// Told which of `targets` it was given a slot on.
    grant: oneshot::Sender<usize>,
}

/// A waiter's place in line: its class's rank (interactive first), its deadline, its arrival.
type Place = (u8, Instant, u64);

#[derive(Default)]
struct Inner {
    /// Target index by region, then id: looked up by `&str`, so planning allocates nothing.
    index: HashMap<String, HashMap<String, usize>>,
    targets: Vec<TargetLoad>,
    waiting: BTreeMap<Place, Waiter>,
    arrivals: u64,
    /// With shared state, the replicas that share targets' slots (0: not shared).
    fleet_replicas: u32,
}

impl Inner {
    fn find(&self, region: &str, id: &str) -> Option<usize> {
        self.index.get(region)?.get(id).copied()
    }

    /// The index of the target an attempt asks for, added when first asked.
    fn target_of(&mut self, ask: SlotAsk<'_>, initial: u32) -> usize {
        let SlotAsk {
            region,
            id,
            configured,
            ..
        } = ask;
        if let Some(i) = self.find(region, id) {
            return i;
        }
        let i = self.targets.len();
        let mut t = TargetLoad::new(configured, initial);
        if self.fleet_replicas > 0 {
            t.fleet = Some(FleetShare {
                region: region.to_string(),
                id: id.to_string(),
                lease: None,
                others: 0,
                spent_until: None,
                asked_at: None,
                asks: 0,
            });
        }
        self.targets.push(t);
        self.index
            .entry(region.to_string())
            .or_default()
            .insert(id.to_string(), i);
        i
    }

    /// Gives freed slots of target `t` to the first waiters in line that may use them.
    fn dispatch(&mut self, t: usize, share: f64) {
        loop {
            let found = self.waiting.iter().find_map(|(place, w)| {
                let (pos, &(_, lane)) = w.targets.iter().enumerate().find(|(_, (i, _))| *i == t)?;
                let target = &self.targets[t];
                target
                    .has_room(lane, w.class, share)
                    .then_some((*place, pos))
            });
            let Some((place, pos)) = found else {
                return;
            };
            let waiter = self.waiting.remove(&place).expect("found above");
            self.targets[t].in_flight += 1;
            if waiter.grant.send(pos).is_err() {
                // The call went away (cancelled, or its wait ended) as the slot came.
                self.targets[t].in_flight -= 1;
            }
        }
    }
}

/// Every target's concurrency and the calls waiting for a slot.
pub struct Headroom {
    config: ConcurrencyConfig,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for Headroom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Headroom")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Where one attempt goes, as headroom counts it.
#[derive(Debug, Clone, Copy)]
pub struct SlotAsk<'r> {
    /// The target's region.
    pub region: &'r str,
    /// The target's id.
    pub id: &'r str,
    /// The attempt's tier.
    pub tier: Option<ServiceTier>,
    /// The model's `quota.max_concurrency`.
    pub configured: Option<u32>,
}

/// A slot given to a call that waited for one.
#[derive(Debug)]
pub struct Granted<'h> {
    /// Which of the targets asked for it is on.
    pub index: usize,
    /// The slot itself.
    pub slot: Slot<'h>,
    /// Calls ahead of it for the same targets when it joined the line.
    pub ahead: u32,
}

/// Why a call could not have a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoSlot {
    /// Every target it may use is full, and the line ahead of it would take about `needed`
    /// to clear: more than its deadline leaves (`left`).
    WouldMissDeadline {
        /// The wait it would need.
        needed: Duration,
        /// What its deadline leaves.
        left: Duration,
        /// Calls ahead of it that wait for the same targets.
        ahead: u32,
    },
    /// It waited `waited` and no slot came while one could still serve it before its
    /// deadline (`left` away when it joined the line, behind `ahead` calls).
    DeadlinePassed {
        /// How long it waited.
        waited: Duration,
        /// What its deadline left when it joined the line.
        left: Duration,
        /// Calls ahead of it for the same targets when it joined.
        ahead: u32,
    },
    /// Queueing is off (`routing.concurrency.queue = false`).
    QueueOff,
}

fn class_rank(class: SloClass) -> u8 {
    match class {
        SloClass::Interactive => 0,
        SloClass::Standard => 1,
        SloClass::Background => 2,
        SloClass::Batch => 3,
    }
}

impl Headroom {
    /// No target known yet.
    pub fn new(config: ConcurrencyConfig) -> Self {
        Self {
            config,
            inner: Mutex::default(),
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A target's load for a call of `class` at `tier`.
    pub fn load(
        &self,
        now: Instant,
        region: &str,
        id: &str,
        tier: Option<ServiceTier>,
        class: SloClass,
    ) -> Load {
        let Some(lane) = Lane::of(tier) else {
            return Load::IDLE;
        };
        let mut inner = self.inner();
        let Some(i) = inner.find(region, id) else {
            // Unknown yet: it would start at its configured or initial limit.
            return Load {
                in_flight: 0,
                limit: Some(self.config.initial_limit.max(1)),
                refusing: false,
            };
        };
        let t = &mut inner.targets[i];
        t.refresh(now, self.config.forget_after);
        Load {
            refusing: t.is_refusing(now),
            ..t.load(lane, class, self.config.background_share)
        }
    }

    /// Whether the target is serving: it answered lately, at least as often as it refused for
    /// capacity. A failover there after a throttle elsewhere moves load to capacity that takes
    /// it, rather than retrying into refusals; a target that refuses everything (a quota
    /// spent, a region throttling), or that has not answered yet, is not serving.
    pub fn is_serving(&self, now: Instant, region: &str, id: &str) -> bool {
        let inner = self.inner();
        inner
            .find(region, id)
            .is_some_and(|i| inner.targets[i].is_serving(now))
    }

    /// A slot on the target for a call of `class`, if it has room (or the attempt's tier is not
    /// counted); else its load. Nobody waiting for the target is passed over: while it is full
    /// they hold their place, and a freed slot goes to them first.
    pub fn try_occupy<'h>(
        &'h self,
        now: Instant,
        ask: SlotAsk<'_>,
        class: SloClass,
    ) -> Result<Option<Slot<'h>>, Load> {
        let Some(lane) = Lane::of(ask.tier) else {
            return Ok(None);
        };
        let share = self.config.background_share;
        let mut inner = self.inner();
        let i = inner.target_of(ask, self.config.initial_limit);
        let t = &mut inner.targets[i];
        t.refresh(now, self.config.forget_after);
        if !t.has_room(lane, class, share) {
            // Shared and within the limit, only the lease is spent: it reads as full here,
            // whatever plans see.
            let load = t.load(lane, class, share);
            return Err(Load {
                limit: Some(t.cap(lane, class, share)),
                ..load
            });
        }
        t.in_flight += 1;
        Ok(Some(self.slot(i, lane, t.in_flight + t.others(), now)))
    }

    /// Shares targets' slots with `replicas` replicas through the fleet's leases: from now on a
    /// target admits only what this replica leased of it.
    pub fn share_with_fleet(&self, replicas: u32) {
        self.inner().fleet_replicas = replicas.max(1);
    }

    /// With shared state, what to lease when the target is full only for want of this
    /// replica's lease (its limit has room): what is in use and a block more, a block being
    /// half this replica's fair share of the limit. `None` when not shared, when the limit
    /// itself is reached, while the fleet lately had nothing more to give, or while another
    /// call asks (this one then waits in line for what that ask brings).
    pub fn lease_wanted(
        &self,
        now: Instant,
        ask: SlotAsk<'_>,
        class: SloClass,
    ) -> Option<LeaseAsk> {
        let lane = Lane::of(ask.tier)?;
        let share = self.config.background_share;
        let mut inner = self.inner();
        let replicas = inner.fleet_replicas;
        if replicas == 0 {
            return None;
        }
        let i = inner.target_of(ask, self.config.initial_limit);
        let t = &mut inner.targets[i];
        let full = t.in_flight >= t.limit_cap(lane, class, share);
        let fleet = t.fleet.as_mut()?;
        if full
            || fleet.spent_until.is_some_and(|until| now < until)
            || fleet
                .asked_at
                .is_some_and(|at| now.saturating_duration_since(at) < ASKING)
        {
            return None;
        }
        fleet.asked_at = Some(now);
        Some(t.lease_ask(replicas, None))
    }

    /// The fleet answered `asked` of the target (`None`: Redis did not, and this replica takes
    /// its share of its own limit); an answer that gave less than was wanted holds further
    /// asks off the calls' path for `quiet`. Waiters that now fit are given their slots.
    pub fn leased(
        &self,
        now: Instant,
        (region, id): (&str, &str),
        asked: LeaseAsk,
        answer: Option<LeaseAnswer>,
        quiet: Duration,
    ) {
        let share = self.config.background_share;
        let mut inner = self.inner();
        let replicas = inner.fleet_replicas.max(1);
        let Some(i) = inner.find(region, id) else {
            return;
        };
        let t = &mut inner.targets[i];
        let own = t.limit(Lane::Main);
        let main = &mut t.lanes[Lane::Main.index()];
        let Some(fleet) = t.fleet.as_mut() else {
            return;
        };
        if asked.seq != fleet.asks {
            // A later ask is on its way (a call's beside a renewal, or one after this one
            // outlasted `ASKING`): an earlier answer landing last must not undo it.
            return;
        }
        fleet.asked_at = None;
        match answer {
            Some(a) => {
                fleet.spent_until = (a.granted < asked.want).then_some(now + quiet);
                fleet.lease = Some(a.granted);
                fleet.others = a.others;
                // The fleet's limit holds every replica's lessons: taken while this replica
                // has no fresh lesson of its own. While its own limit still grows untaught,
                // it only raises it, unless a throttle taught the fleet: that lesson is this
                // replica's too (else its slow start, sent with its next ask, would lift the
                // fleet's limit past the lesson once `probe_after` has passed).
                // Taken as if this replica had been throttled then: held for `probe_after`,
                // forgotten after `forget_after`.
                let fleet_limit = f64::from(a.limit);
                let taught_at = a
                    .taught_ago
                    .filter(|ago| *ago < self.config.forget_after)
                    .map(|ago| now.checked_sub(ago).unwrap_or(now));
                if let Some(at) = taught_at.filter(|_| main.probing) {
                    main.value = fleet_limit;
                    main.probing = false;
                    t.last_throttle = t.last_throttle.max(Some(at));
                } else if main.probing {
                    main.value = main.value.max(fleet_limit);
                } else if main.lesson_until.is_none_or(|until| now > until) {
                    main.value = fleet_limit;
                } else {
                    main.value = main.value.min(fleet_limit);
                }
            }
            None => {
                fleet.lease = Some((own / replicas).max(1));
                fleet.others = 0;
                fleet.spent_until = Some(now + quiet);
            }
        }
        inner.dispatch(i, share);
    }

    /// The leases to renew (or give back) now, off the calls' path: every target this replica
    /// holds slots of or has calls waiting for, asking for what is in use and a block more (or
    /// a slot for each call waiting, when more wait) while any is in use or wanted, else for
    /// nothing. A target asked of already (by a call) is left to that ask.
    pub fn renewals(&self, now: Instant) -> Vec<(String, String, LeaseAsk)> {
        let mut inner = self.inner();
        let replicas = inner.fleet_replicas;
        let mut waiting = vec![0u32; inner.targets.len()];
        for w in inner.waiting.values() {
            for &(i, _) in &w.targets {
                waiting[i] += 1;
            }
        }
        inner
            .targets
            .iter_mut()
            .zip(waiting)
            .filter_map(|(t, waiting)| {
                let f = t.fleet.as_mut()?;
                let busy = t.in_flight > 0 || waiting > 0;
                // A call asking now brings the news: no second ask beside it. (A call may ask
                // while a renewal is on its way: the later ask's answer is the one taken.)
                let asking = f
                    .asked_at
                    .is_some_and(|at| now.saturating_duration_since(at) < ASKING);
                if asking || (f.lease.unwrap_or(0) == 0 && !busy) {
                    return None;
                }
                let (region, id) = (f.region.clone(), f.id.clone());
                let more = if busy {
                    t.lease_block(replicas).max(waiting)
                } else {
                    0
                };
                Some((region, id, t.lease_ask(replicas, Some(more))))
            })
            .collect()
    }

    fn slot(&self, target: usize, lane: Lane, in_flight: u32, now: Instant) -> Slot<'_> {
        Slot {
            headroom: self,
            target,
            lane,
            in_flight_at_send: in_flight,
            taken: now,
        }
    }

    /// How long a call of `class` would wait for a slot on one of `asks`, and how many wait
    /// ahead of it for the same targets: those ahead and itself, times the targets' usual
    /// hold (`prior_hold` where none is known), over the slots they have between them.
    fn expected_wait(
        inner: &Inner,
        targets: &[(usize, Lane)],
        place: Place,
        class: SloClass,
        share: f64,
        prior_hold: Duration,
    ) -> (Duration, u32, Duration) {
        let ahead = inner
            .waiting
            .range(..place)
            .filter(|(_, w)| {
                w.targets
                    .iter()
                    .any(|(i, _)| targets.iter().any(|(j, _)| i == j))
            })
            .count() as u32;
        let mut slots = 0u64;
        let mut hold = 0.0;
        for &(i, lane) in targets {
            let t = &inner.targets[i];
            slots += u64::from(t.cap(lane, class, share));
            hold += t.hold_s.unwrap_or(prior_hold.as_secs_f64());
        }
        let hold = (hold / targets.len().max(1) as f64).min(1e9);
        let waves = f64::from(ahead + 1) / slots.max(1) as f64;
        (
            Duration::from_secs_f64((waves * hold).min(1e9)),
            ahead,
            Duration::from_secs_f64(hold),
        )
    }

    /// Waits in line for a slot on one of `asks` (every one of them full when it was asked),
    /// while a slot given could still be used before `deadline` (the targets' usual hold, or
    /// `prior_hold`, before it). A call whose wait would plainly outlast its deadline is
    /// refused at once, saying the wait it would have needed.
    pub async fn wait_for_slot<'h>(
        &'h self,
        asks: &[SlotAsk<'_>],
        class: SloClass,
        deadline: tokio::time::Instant,
        prior_hold: Duration,
    ) -> Result<Granted<'h>, NoSlot> {
        if !self.config.queue {
            return Err(NoSlot::QueueOff);
        }
        let share = self.config.background_share;
        let started = tokio::time::Instant::now();
        let now = crate::time::now();
        let left = deadline.saturating_duration_since(started);
        let (rx, place, targets, positions, ahead, until) = {
            let mut inner = self.inner();
            // The counted asks (reserved ones are not), and where each stands in `asks`.
            let mut targets = Vec::with_capacity(asks.len());
            let mut positions = Vec::with_capacity(asks.len());
            for (pos, a) in asks.iter().enumerate() {
                if let Some(lane) = Lane::of(a.tier) {
                    targets.push((inner.target_of(*a, self.config.initial_limit), lane));
                    positions.push(pos);
                }
            }
            // A slot may have freed since the call was refused one.
            for (k, &(i, lane)) in targets.iter().enumerate() {
                let t = &mut inner.targets[i];
                if t.has_room(lane, class, share) {
                    t.in_flight += 1;
                    return Ok(Granted {
                        index: positions[k],
                        slot: self.slot(i, lane, t.in_flight + t.others(), now),
                        ahead: 0,
                    });
                }
            }
            inner.arrivals += 1;
            let place = (class_rank(class), deadline.into_std(), inner.arrivals);
            let (needed, ahead, hold) =
                Self::expected_wait(&inner, &targets, place, class, share, prior_hold);
            if needed + hold >= left {
                return Err(NoSlot::WouldMissDeadline {
                    needed,
                    left,
                    ahead,
                });
            }
            let (tx, rx) = oneshot::channel();
            inner.waiting.insert(
                place,
                Waiter {
                    targets: targets.clone(),
                    class,
                    grant: tx,
                },
            );
            (rx, place, targets, positions, ahead, deadline - hold)
        };
        let mut waiting = Waiting {
            headroom: self,
            place,
            rx,
            targets: &targets,
            served: false,
        };
        let granted = tokio::time::timeout_at(until, &mut waiting.rx).await;
        match granted {
            Ok(Ok(k)) => {
                let (i, lane) = targets[k];
                // The dispatcher counted the slot in already.
                let in_flight = {
                    let inner = self.inner();
                    inner.targets[i].in_flight + inner.targets[i].others()
                };
                waiting.done();
                Ok(Granted {
                    index: positions[k],
                    slot: self.slot(i, lane, in_flight, crate::time::now()),
                    ahead,
                })
            }
            _ => Err(NoSlot::DeadlinePassed {
                waited: started.elapsed(),
                left,
                ahead,
            }),
        }
    }

    /// Calls waiting in line now.
    pub fn waiting(&self) -> usize {
        self.inner().waiting.len()
    }

    fn release(&self, target: usize, held: Duration) {
        let mut inner = self.inner();
        let t = &mut inner.targets[target];
        t.in_flight = t.in_flight.saturating_sub(1);
        let s = held.as_secs_f64();
        t.hold_s = Some(t.hold_s.map_or(s, |h| 0.9 * h + 0.1 * s));
        inner.dispatch(target, self.config.background_share);
    }
}

/// A call's place in line; leaving it (its wait ended, or the call was cancelled) gives back
/// a slot that came too late.
struct Waiting<'h, 't> {
    headroom: &'h Headroom,
    place: Place,
    rx: oneshot::Receiver<usize>,
    targets: &'t [(usize, Lane)],
    /// The call took the slot it was given: nothing to give back.
    served: bool,
}

impl Waiting<'_, '_> {
    fn done(mut self) {
        self.served = true;
    }
}

impl Drop for Waiting<'_, '_> {
    fn drop(&mut self) {
        if self.served {
            return;
        }
        let removed = self.headroom.inner().waiting.remove(&self.place).is_some();
        if !removed && let Ok(pos) = self.rx.try_recv() {
            // Granted as the wait ended: the slot goes to the next in line.
            self.headroom.release(self.targets[pos].0, Duration::ZERO);
        }
    }
}

/// One attempt's slot on its target, given back when dropped (to the first call in line for
/// that target, if any). What the attempt met teaches the target's limit.
pub struct Slot<'h> {
    headroom: &'h Headroom,
    target: usize,
    lane: Lane,
    /// Attempts in flight there when this one was sent, itself included.
    in_flight_at_send: u32,
    taken: Instant,
}

impl std::fmt::Debug for Slot<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("lane", &self.lane)
            .field("in_flight_at_send", &self.in_flight_at_send)
            .finish_non_exhaustive()
    }
}

impl Slot<'_> {
    /// Other attempts of this router in flight on the target now: a throttle beside them is
    /// the target at its concurrency, one with none beside it a target refusing as such.
    pub fn others_in_flight(&self) -> u32 {
        self.headroom.inner().targets[self.target]
            .in_flight
            .saturating_sub(1)
    }

    /// The target refused the attempt for capacity: its lane's limit comes down to the other
    /// attempts in flight there (the first lesson, and the refusals of the same wave), or by a
    /// tenth at most (later ones), as
    /// additive-increase, multiplicative-decrease limiters do, so that one throttle of a quota
    /// window does not collapse it.
    ///
    /// Shared, what was in flight is the fleet's (the other replicas' slots counted), and the
    /// lesson is returned for the fleet to learn.
    pub fn throttled(&self, now: Instant) -> Option<Lesson> {
        let h = self.headroom;
        let mut inner = h.inner();
        let t = &mut inner.targets[self.target];
        t.last_throttle = Some(now);
        if t.in_flight <= 1 {
            // Refused with nothing else of ours in flight there: the target refuses as such (a
            // wave's refusals beside the attempts it admitted only teach its limit). Shared,
            // the other replicas' leases do not say so: they count slots held, used or not.
            t.refused.add(now, 1.0);
        }
        if !h.config.learn {
            return None;
        }
        let others = t.others();
        // What the target held when it refused: this router's other attempts in flight there
        // now. Not the count when this one was sent: the attempts of a wave reach the service
        // in another order than they were counted, while those it admitted are all still in
        // flight when the wave's refusals come back.
        let seen = f64::from((t.in_flight + others).saturating_sub(1).max(1));
        // The answers to a wave of attempts arrive within about one hold of each other.
        let hold = Duration::from_secs_f64(t.hold_s.unwrap_or(1.0).clamp(0.001, 60.0));
        let l = &mut t.lanes[self.lane.index()];
        if l.probing {
            // Never up: shared, the other replicas' leases are counted whole, used or not.
            l.value = l.value.min(seen);
            l.probing = false;
            l.lesson_until = Some(now + hold);
        } else if l.lesson_until.is_some_and(|until| now <= until) {
            l.value = l.value.min(seen);
        } else if seen < l.value {
            l.value = seen.max((l.value * 0.9).floor()).max(1.0);
            l.cut_until = Some(now + hold);
        } else if l.cut_until.is_none_or(|until| now > until) {
            // Refused with the limit in flight, as far as this replica knows (shared, the
            // others' leases count whole, used or not): still too high, by a tenth, once per
            // wave.
            l.value = (l.value * 0.9).floor().max(1.0);
            l.cut_until = Some(now + hold);
        }
        let shared = t.fleet.is_some() && self.lane == Lane::Main;
        shared.then(|| Lesson {
            limit: t.limit(Lane::Main),
            others_seen: others,
        })
    }

    /// The target served the attempt, sent at (or above) its lane's limit: a limit no throttle
    /// has taught grows by one (doubling per round of calls, as TCP's slow start); a taught
    /// one grows by `1 / limit` once the target has not throttled for `probe_after`. Within a
    /// configured limit. Its answers count toward its being cool.
    pub fn served(&self, now: Instant) {
        let h = self.headroom;
        let mut inner = h.inner();
        let t = &mut inner.targets[self.target];
        t.served.add(now, 1.0);
        if !h.config.learn {
            return;
        }
        let quiet = t
            .last_throttle
            .is_none_or(|at| now.saturating_duration_since(at) >= h.config.probe_after);
        let ceiling = t.configured.map_or(f64::INFINITY, f64::from);
        let l = &mut t.lanes[self.lane.index()];
        if f64::from(self.in_flight_at_send) < l.value.floor() || l.value >= ceiling {
            return;
        }
        if l.probing {
            l.value += 1.0;
        } else if quiet {
            l.value += 1.0 / l.value.max(1.0);
        }
        l.value = l.value.min(ceiling);
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let held = crate::time::now().saturating_duration_since(self.taken);
        self.headroom.release(self.target, held);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headroom() -> Headroom {
        Headroom::new(crate::config::Config::default().routing.concurrency)
    }

    fn ask(id: &str) -> SlotAsk<'_> {
        SlotAsk {
            region: "us-east-1",
            id,
            tier: Some(ServiceTier::STANDARD),
            configured: None,
        }
    }

    fn limit(h: &Headroom, at: Instant) -> Option<u32> {
        h.load(
            at,
            "us-east-1",
            "m",
            Some(ServiceTier::STANDARD),
            SloClass::Standard,
        )
        .limit
    }

    #[tokio::test]
    async fn an_untaught_limit_doubles_per_round_until_a_throttle_teaches_it() {
        let h = headroom();
        let now = crate::time::now();
        let initial = h.config.initial_limit;
        assert_eq!(limit(&h, now), Some(initial));
        // Calls kept at the limit (a queue waiting), each served: one more slot per success.
        let mut held = Vec::new();
        for _ in 0..initial {
            while let Ok(Some(s)) = h.try_occupy(now, ask("m"), SloClass::Standard) {
                held.push(s);
            }
            let last = held.pop().unwrap();
            last.served(now);
        }
        assert_eq!(limit(&h, now), Some(2 * initial));
        // Fill it: the service refuses the one sent with 2 * initial - 1 others in flight.
        while let Ok(Some(s)) = h.try_occupy(now, ask("m"), SloClass::Standard) {
            held.push(s);
        }
        held.last().unwrap().throttled(now);
        assert_eq!(limit(&h, now), Some(2 * initial - 1));
    }

    #[tokio::test]
    async fn a_taught_limit_is_held_then_probed_slowly_then_forgotten() {
        let h = headroom();
        let now = crate::time::now();
        let slots: Vec<_> = (0..5)
            .map(|_| {
                h.try_occupy(now, ask("m"), SloClass::Standard)
                    .unwrap()
                    .unwrap()
            })
            .collect();
        // The fifth was refused by the service: four fit.
        slots[4].throttled(now);
        drop(slots);
        assert_eq!(limit(&h, now), Some(4));
        let mut held: Vec<_> = (0..4)
            .map(|_| {
                h.try_occupy(now, ask("m"), SloClass::Standard)
                    .unwrap()
                    .unwrap()
            })
            .collect();
        assert_eq!(
            h.try_occupy(now, ask("m"), SloClass::Standard).unwrap_err(),
            Load {
                in_flight: 4,
                limit: Some(4),
                refusing: false
            }
        );
        // Successes at the limit right after the throttle: held.
        let mut serve_at_limit = |at: Instant| {
            held.remove(0);
            let s = h
                .try_occupy(at, ask("m"), SloClass::Standard)
                .unwrap()
                .unwrap();
            s.served(at);
            held.push(s);
        };
        for _ in 0..10 {
            serve_at_limit(now);
        }
        assert_eq!(limit(&h, now), Some(4));
        // Quiet for `probe_after`: a quarter, a little less, ...: five make one more slot.
        let quiet = now + h.config.probe_after;
        for _ in 0..5 {
            serve_at_limit(quiet);
        }
        assert_eq!(limit(&h, quiet), Some(5));
        drop(held);
        // Forgotten a while after the last throttle: it grows by one per success again.
        let later = now + h.config.forget_after;
        assert_eq!(limit(&h, later), Some(5));
        let s = h
            .try_occupy(later, ask("m"), SloClass::Standard)
            .unwrap()
            .unwrap();
        let _others: Vec<_> = (0..4)
            .map(|_| {
                h.try_occupy(later, ask("m"), SloClass::Standard)
                    .unwrap()
                    .unwrap()
            })
            .collect();
        drop(s);
        let fifth = h
            .try_occupy(later, ask("m"), SloClass::Standard)
            .unwrap()
            .unwrap();
        fifth.served(later);
        assert_eq!(limit(&h, later), Some(6));
    }

    #[tokio::test]
    async fn a_throttle_at_low_load_lowers_a_configured_limit_by_a_tenth_at_most() {
        let h = headroom();
        let now = crate::time::now();
        let ask = SlotAsk {
            configured: Some(40),
            ..ask("m")
        };
        assert_eq!(
            limit(&h, now),
            Some(h.config.initial_limit),
            "not asked for yet"
        );
        let s = h.try_occupy(now, ask, SloClass::Standard).unwrap().unwrap();
        assert_eq!(limit(&h, now), Some(40));
        // Alone in flight and throttled: a quota window, not concurrency.
        s.throttled(now);
        assert_eq!(limit(&h, now), Some(36));
        s.throttled(now);
        assert_eq!(
            limit(&h, now),
            Some(32),
            "a target that keeps refusing keeps coming down"
        );
        let refusing = || {
            h.load(
                now,
                "us-east-1",
                "m",
                Some(ServiceTier::STANDARD),
                SloClass::Standard,
            )
            .refusing
        };
        assert!(!h.is_serving(now, "us-east-1", "m") && refusing());
        s.served(now);
        assert!(
            !h.is_serving(now, "us-east-1", "m") && refusing(),
            "one answer for two refusals"
        );
        s.served(now);
        assert!(
            h.is_serving(now, "us-east-1", "m"),
            "as many answers as refusals"
        );
        assert!(!refusing());
        // Refusals long past do not count.
        let later = now + Duration::from_secs(30);
        assert!(
            !h.is_serving(later, "us-east-1", "m"),
            "nothing answered lately"
        );
    }

    #[tokio::test]
    async fn background_calls_leave_a_share_of_each_target_to_the_others() {
        let h = headroom();
        let now = crate::time::now();
        let ask = SlotAsk {
            configured: Some(4),
            ..ask("m")
        };
        let bg: Vec<_> = (0..3)
            .map(|_| {
                h.try_occupy(now, ask, SloClass::Background)
                    .unwrap()
                    .unwrap()
            })
            .collect();
        assert!(h.try_occupy(now, ask, SloClass::Background).is_err());
        let interactive = h.try_occupy(now, ask, SloClass::Interactive).unwrap();
        assert!(interactive.is_some());
        drop(bg);
    }

    #[tokio::test(start_paused = true)]
    async fn a_freed_slot_goes_to_the_line_in_class_then_deadline_order() {
        let h = std::sync::Arc::new(headroom());
        let now = crate::time::now();
        let ask = SlotAsk {
            configured: Some(1),
            ..ask("m")
        };
        let held = h.try_occupy(now, ask, SloClass::Standard).unwrap().unwrap();
        let order = std::sync::Arc::new(Mutex::new(Vec::new()));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        let mut tasks = Vec::new();
        for (name, class) in [
            ("background", SloClass::Background),
            ("standard", SloClass::Standard),
            ("interactive", SloClass::Interactive),
        ] {
            let (h, order) = (h.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let slot = h
                    .wait_for_slot(&[ask], class, deadline, Duration::from_millis(100))
                    .await
                    .unwrap()
                    .slot;
                order.lock().unwrap().push(name);
                tokio::time::sleep(Duration::from_millis(10)).await;
                drop(slot);
            }));
            tokio::task::yield_now().await;
        }
        assert_eq!(h.waiting(), 3);
        drop(held);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(
            *order.lock().unwrap(),
            ["interactive", "standard", "background"]
        );
        assert_eq!(h.waiting(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_beyond_the_deadline_is_refused_at_once_or_ends_at_it() {
        let h = headroom();
        let now = crate::time::now();
        let ask = SlotAsk {
            configured: Some(1),
            ..ask("m")
        };
        let _held = h.try_occupy(now, ask, SloClass::Standard).unwrap().unwrap();
        let soon = tokio::time::Instant::now() + Duration::from_millis(50);
        // A slot is usually held a second: fifty milliseconds is plainly too short.
        let refused = h
            .wait_for_slot(&[ask], SloClass::Standard, soon, Duration::from_secs(1))
            .await
            .unwrap_err();
        assert!(
            matches!(refused, NoSlot::WouldMissDeadline { ahead: 0, .. }),
            "{refused:?}"
        );
        let later = tokio::time::Instant::now() + Duration::from_secs(5);
        let ended = h
            .wait_for_slot(&[ask], SloClass::Standard, later, Duration::from_secs(1))
            .await
            .unwrap_err();
        // It waits while a slot could still serve it: until a usual hold before the deadline.
        assert!(
            matches!(ended, NoSlot::DeadlinePassed { waited, ahead: 0, .. } if waited == Duration::from_secs(4)),
            "{ended:?}"
        );
        assert_eq!(h.waiting(), 0, "the line forgets a call whose wait ended");
    }

    fn answer(granted: u32, limit: u32, others: u32) -> Option<LeaseAnswer> {
        Some(LeaseAnswer {
            granted,
            limit,
            others,
            taught_ago: None,
        })
    }

    fn fill(h: &Headroom, at: Instant) -> Vec<Slot<'_>> {
        std::iter::from_fn(|| h.try_occupy(at, ask("m"), SloClass::Standard).ok()?).collect()
    }

    #[tokio::test]
    async fn a_replica_asks_the_fleet_once_at_a_time_and_its_ledger_counts_what_it_may_admit() {
        let h = headroom();
        h.share_with_fleet(3);
        let now = crate::time::now();
        let target = ("us-east-1", "m");
        let quiet = Duration::from_millis(100);
        assert!(fill(&h, now).is_empty(), "nothing leased yet");
        // A block is half a fair share of the untaught limit: 16 / 3 / 2, rounded up.
        let first = h.lease_wanted(now, ask("m"), SloClass::Standard).unwrap();
        assert_eq!((first.want, first.in_use), (3, 0));
        assert!(h.lease_wanted(now, ask("m"), SloClass::Standard).is_none());
        assert!(
            h.renewals(now).is_empty(),
            "the call's ask brings the news: no renewal beside it"
        );
        h.leased(now, target, first, answer(3, 16, 0), quiet);
        let mut held = fill(&h, now);
        assert_eq!(held.len(), 3);
        let more = h.lease_wanted(now, ask("m"), SloClass::Standard).unwrap();
        assert_eq!((more.want, more.in_use), (6, 3));
        h.leased(now, target, more, answer(6, 16, 4), quiet);
        held.extend(fill(&h, now));
        assert_eq!(held.len(), 6);
        held.truncate(1);
        // Renewing with one in use: it keeps a block more and gives the rest back at once, and
        // claims what it may admit before the answer comes as in use.
        let [(_, _, renewal)] = h.renewals(now).try_into().unwrap();
        assert_eq!((renewal.want, renewal.in_use), (4, 4));
        held.extend(fill(&h, now));
        assert_eq!(held.len(), 4, "no admission beyond what the ask claimed");
        // A call asks while the renewal is on its way; the renewal's answer lands last and is
        // not taken: the call's is the news.
        let call = h.lease_wanted(now, ask("m"), SloClass::Standard).unwrap();
        assert!(call.seq > renewal.seq);
        h.leased(now, target, call, answer(7, 16, 4), quiet);
        h.leased(now, target, renewal, answer(4, 16, 4), quiet);
        held.extend(fill(&h, now));
        assert_eq!(held.len(), 7, "the later ask's lease holds");
    }

    #[tokio::test]
    async fn a_replica_still_in_slow_start_takes_the_lesson_another_taught_the_fleet() {
        let h = headroom();
        h.share_with_fleet(3);
        let now = crate::time::now();
        let target = ("us-east-1", "m");
        let quiet = Duration::from_millis(100);
        // Untaught, the fleet's limit only raises this replica's.
        let first = h.lease_wanted(now, ask("m"), SloClass::Standard).unwrap();
        h.leased(now, target, first, answer(3, 20, 0), quiet);
        assert_eq!(own_limit(&h), 20);
        // Another replica's throttle taught the fleet 8 a second ago: this replica's limit is 8
        // now, held for `probe_after` as its own lesson would be (else its slow start, sent
        // with its next ask, would lift the fleet's limit past the lesson).
        let [(_, _, renewal)] = h.renewals(now).try_into().unwrap();
        let taught = Some(LeaseAnswer {
            taught_ago: Some(Duration::from_secs(1)),
            ..answer(8, 8, 0).unwrap()
        });
        h.leased(now, target, renewal, taught, quiet);
        assert_eq!(own_limit(&h), 8);
        let held = fill(&h, now);
        assert_eq!(held.len(), 8);
        for slot in held {
            slot.served(now);
        }
        assert_eq!(own_limit(&h), 8, "taught: no slow start");
        // Its lesson is forgotten `forget_after` after it was taught: slow start again.
        let later = now + Duration::from_secs(60);
        let held = fill(&h, later);
        assert_eq!(held.len(), 8);
        for slot in held {
            slot.served(later);
        }
        assert!(
            own_limit(&h) > 8,
            "untaught again: it grows by one per success"
        );
    }

    #[tokio::test]
    async fn a_replica_whose_fleet_holds_the_whole_limit_admits_nothing_until_slots_come_back() {
        let h = headroom();
        h.share_with_fleet(3);
        let now = crate::time::now();
        let target = ("us-east-1", "m");
        let quiet = Duration::from_millis(100);
        let first = h.lease_wanted(now, ask("m"), SloClass::Standard).unwrap();
        // A lesson of 8 came while the others held 8: no slot of the target is this one's.
        let full = Some(LeaseAnswer {
            taught_ago: Some(Duration::from_millis(10)),
            ..answer(3, 8, 8).unwrap()
        });
        h.leased(now, target, first, full, quiet);
        assert!(
            fill(&h, now).is_empty(),
            "no floor of one slot over a full fleet"
        );
        assert_eq!(
            limit(&h, now),
            Some(0),
            "plans see it full, and prefer a target with room"
        );
        // The others gave five back: three are this replica's to use.
        let [(_, _, renewal)] = h.renewals(now).try_into().unwrap();
        let freed = Some(LeaseAnswer {
            taught_ago: Some(Duration::from_millis(110)),
            ..answer(3, 8, 3).unwrap()
        });
        h.leased(now, target, renewal, freed, quiet);
        assert_eq!(fill(&h, now).len(), 3);
    }

    /// This replica's own limit of the target (not what its lease lets it admit).
    fn own_limit(h: &Headroom) -> u32 {
        let inner = h.inner();
        let i = inner.find("us-east-1", "m").unwrap();
        inner.targets[i].limit(Lane::Main)
    }

    #[tokio::test]
    async fn shared_a_throttle_never_raises_a_limit_and_one_at_it_cuts_a_tenth_per_wave() {
        let h = headroom();
        h.share_with_fleet(3);
        let now = crate::time::now();
        let target = ("us-east-1", "m");
        let quiet = Duration::from_millis(100);
        let ask8 = h.lease_wanted(now, ask("m"), SloClass::Standard).unwrap();
        h.leased(now, target, ask8, answer(8, 16, 0), quiet);
        let held = fill(&h, now);
        assert_eq!(held.len(), 8);
        // The others leased twelve meanwhile: twenty in the fleet's count, on a limit of 16.
        let [(_, _, renewal)] = h.renewals(now).try_into().unwrap();
        h.leased(now, target, renewal, answer(8, 16, 12), quiet);
        assert_eq!(
            held[7].throttled(now).map(|l| l.limit),
            Some(16),
            "never up"
        );
        // Later throttles with the limit in flight (as this replica counts): a tenth less,
        // once per wave (a slot's usual hold, a second before any was measured).
        let later = now + Duration::from_secs(2);
        assert_eq!(held[6].throttled(later).map(|l| l.limit), Some(14));
        assert_eq!(
            held[5].throttled(later).map(|l| l.limit),
            Some(14),
            "the same wave"
        );
        let next = later + Duration::from_secs(2);
        assert_eq!(held[4].throttled(next).map(|l| l.limit), Some(12));
    }
}
