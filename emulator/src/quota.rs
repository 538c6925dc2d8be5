//! Bedrock's capacity model: on-demand quotas per (region, model or profile) in requests and
//! tokens per minute, reservations that overflow to the on-demand tier on the server, and
//! concurrency.
//!
//! Tokens count as Bedrock counts them ("How tokens are counted in Amazon Bedrock"): at
//! admission the request's input (cache reads and writes included) plus `max_tokens` times the
//! model's output burndown rate (5 for the Claude 4 family, 1 otherwise; the model's maximum
//! output when `max_tokens` is absent); when the answer has been delivered the count settles
//! to new input plus cache writes plus the actual output times the burndown rate.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::engine::ApiError;
use crate::scenario::{Performance, ReservationSpec};

/// Share of a pool's concurrency that flex requests may use: flex yields under high demand.
const FLEX_SHARE: f64 = 0.8;

/// One request's claim on capacity.
#[derive(Debug, Clone)]
pub(crate) struct Demand<'a> {
    /// Region and the id as sent (model, profile or endpoint): quotas are per both.
    pub region: &'a str,
    pub target: &'a str,
    /// The bare model id: a reservation is the model's, whichever region or profile calls it
    /// (as the router's configuration holds it).
    pub model: &'a str,
    /// `default`, `priority`, `flex`, `reserved` or `batch`.
    pub tier: &'a str,
    pub performance: &'a Performance,
    /// The model's reservation, if it has one.
    pub reservation: Option<&'a ReservationSpec>,
    /// Input tokens, cache reads and writes included.
    pub input_tokens: u64,
    /// `max_tokens`, or the model's maximum output when absent.
    pub max_output_tokens: u64,
    /// Quota tokens one output token costs.
    pub output_burndown: u64,
    /// A call to bedrock-mantle: its pool's input and output tokens per minute (no request
    /// count, no burndown, cache reads free).
    pub mantle: Option<[u64; 2]>,
}

/// Tokens (or requests) in a sliding window: entries of two counts each.
#[derive(Debug, Default)]
struct Window {
    entries: VecDeque<Entry>,
    sum: [u64; 2],
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    id: u64,
    at: Instant,
    counts: [u64; 2],
}

impl Window {
    fn expire(&mut self, now: Instant, length: Duration) {
        while let Some(e) = self.entries.front() {
            if now.saturating_duration_since(e.at) < length {
                break;
            }
            self.sum[0] -= e.counts[0];
            self.sum[1] -= e.counts[1];
            self.entries.pop_front();
        }
    }

    fn fits(&self, add: [u64; 2], limit: [u64; 2]) -> [bool; 2] {
        [
            self.sum[0] + add[0] <= limit[0],
            self.sum[1] + add[1] <= limit[1],
        ]
    }

    fn push(&mut self, id: u64, at: Instant, counts: [u64; 2]) {
        self.entries.push_back(Entry { id, at, counts });
        self.sum[0] += counts[0];
        self.sum[1] += counts[1];
    }

    fn settle(&mut self, id: u64, counts: [u64; 2]) {
        if let Some(e) = self.entries.iter_mut().find(|e| e.id == id) {
            self.sum[0] = self.sum[0] - e.counts[0] + counts[0];
            self.sum[1] = self.sum[1] - e.counts[1] + counts[1];
            e.counts = counts;
        }
    }
}

/// One capacity pool: on-demand (shared by priority, default and flex), a reservation, or
/// batch. Its window counts `[requests, tokens]` (on-demand) or `[input, output]` tokens
/// (a reservation).
#[derive(Debug, Default)]
struct Pool {
    in_flight: u32,
    window: Window,
}

#[derive(Debug, Default)]
struct Pools {
    pools: HashMap<String, Pool>,
    next: u64,
}

/// Every pool of the emulated world, with the length of its minute.
#[derive(Debug, Clone)]
pub(crate) struct Quotas {
    pools: Arc<Mutex<Pools>>,
    /// A minute of scenario time (60 s times the time scale).
    minute: Duration,
}

/// Which pool a request was admitted to and so which tier served it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Served {
    OnDemand,
    Reserved,
    /// Above the reservation: served by the on-demand pool at the standard tier.
    Overflow,
    Batch,
    /// bedrock-mantle's pool.
    Mantle,
}

/// A request's hold on its pool: a concurrency slot until dropped, and its window entry,
/// settled to actual usage when dropped.
#[derive(Debug)]
pub(crate) struct Slot {
    quotas: Quotas,
    key: String,
    entry: u64,
    /// The entry's counts once the answer is known.
    settled: Option<[u64; 2]>,
    pub served: Served,
}

impl Slot {
    /// Records the answer's actual usage: new input, cache reads and writes, output.
    pub(crate) fn settle_on(
        &mut self,
        demand: &Demand<'_>,
        new_input: u64,
        cache_write: u64,
        output: u64,
    ) {
        self.settled = Some(match self.served {
            Served::Reserved | Served::Mantle => [new_input + cache_write, output],
            _ => [1, new_input + cache_write + output * demand.output_burndown],
        });
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut all = self.quotas.pools.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = all.pools.get_mut(&self.key) {
            p.in_flight = p.in_flight.saturating_sub(1);
            if let Some(counts) = self.settled {
                p.window.settle(self.entry, counts);
            }
        }
    }
}

/// One request being admitted: its entry in the pools' windows, when, what it asks, and the
/// output it is counted for (`max_tokens` times the burndown).
struct Admission<'d> {
    id: u64,
    now: Instant,
    demand: &'d Demand<'d>,
    output: u64,
}

impl Quotas {
    /// Pools whose minute lasts `minute` of wall time.
    pub(crate) fn new(minute: Duration) -> Self {
        Self {
            pools: Arc::default(),
            minute,
        }
    }

    /// Admits a request to its pool, or refuses it with Bedrock's throttling error. A reserved
    /// request above its reservation overflows to the on-demand pool, as Bedrock does.
    pub(crate) fn admit(&self, demand: &Demand<'_>) -> Result<Slot, ApiError> {
        self.admit_at(demand, Instant::now())
    }

    fn admit_at(&self, demand: &Demand<'_>, now: Instant) -> Result<Slot, ApiError> {
        let mut all = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        all.next += 1;
        let id = all.next;
        let base = format!("{}|{}", demand.region, demand.target);
        let output = demand.max_output_tokens * demand.output_burndown;
        let entry = Admission {
            id,
            now,
            demand,
            output,
        };
        if let Some(limit) = demand.mantle {
            // Input and `max_tokens` count against input tokens at admission; output is
            // counted as generated, so a call needs only room for one more output token.
            let key = format!("mantle|{base}");
            let pool = all.pools.entry(key.clone()).or_default();
            pool.window.expire(now, self.minute);
            let concurrency = demand.performance.max_concurrency.max(1);
            if pool.in_flight >= concurrency {
                return Err(mantle_throttled("requests"));
            }
            let input = demand.input_tokens + demand.max_output_tokens;
            match pool.window.fits([input, 1], limit) {
                [false, _] => return Err(mantle_throttled("input tokens")),
                [_, false] => return Err(mantle_throttled("output tokens")),
                _ => {}
            }
            pool.in_flight += 1;
            pool.window.push(id, now, [input, 0]);
            return Ok(self.slot(key, id, Served::Mantle));
        }
        if demand.tier == "batch" {
            // Batch jobs run on capacity apart from on-demand traffic.
            let key = format!("{base}|batch");
            all.pools.entry(key.clone()).or_default().in_flight += 1;
            return Ok(self.slot(key, id, Served::Batch));
        }
        if demand.tier == "reserved" {
            match demand.reservation {
                Some(r) => {
                    let key = format!("reserved|{}", demand.model);
                    let pool = all.pools.entry(key.clone()).or_default();
                    pool.window.expire(now, self.minute);
                    // A reservation is sized in input and output tokens themselves: no burndown.
                    let counts = [demand.input_tokens, demand.max_output_tokens];
                    let limit = [r.input_tokens_per_minute, r.output_tokens_per_minute];
                    if pool.window.fits(counts, limit) == [true, true] {
                        pool.in_flight += 1;
                        pool.window.push(id, now, counts);
                        return Ok(self.slot(key, id, Served::Reserved));
                    }
                    return self.on_demand(&mut all, &base, &entry).map(|mut s| {
                        s.served = Served::Overflow;
                        s
                    });
                }
                // A model listing the reserved tier without a reservation in the scenario: a
                // pool of its own with the model's ordinary limits.
                None => {
                    let key = format!("{base}|reserved-unlimited");
                    return self.on_demand_pool(&mut all, key, &entry, 1.0);
                }
            }
        }
        self.on_demand(&mut all, &base, &entry)
    }

    /// Admits to the target's on-demand pool (flex to its share of the concurrency).
    fn on_demand(
        &self,
        all: &mut Pools,
        base: &str,
        entry: &Admission<'_>,
    ) -> Result<Slot, ApiError> {
        let share = if entry.demand.tier == "flex" {
            FLEX_SHARE
        } else {
            1.0
        };
        self.on_demand_pool(all, format!("{base}|on-demand"), entry, share)
    }

    /// Admits to the pool `key` with the model's ordinary limits, `concurrency_share` of its
    /// concurrency.
    fn on_demand_pool(
        &self,
        all: &mut Pools,
        key: String,
        entry: &Admission<'_>,
        concurrency_share: f64,
    ) -> Result<Slot, ApiError> {
        let &Admission {
            id,
            now,
            demand,
            output,
        } = entry;
        let perf = demand.performance;
        let pool = all.pools.entry(key.clone()).or_default();
        pool.window.expire(now, self.minute);
        let concurrency =
            ((f64::from(perf.max_concurrency) * concurrency_share).floor() as u32).max(1);
        if pool.in_flight >= concurrency {
            return Err(throttled("requests"));
        }
        let counts = [1, demand.input_tokens + output];
        let limit = [perf.requests_per_minute, perf.tokens_per_minute];
        match pool.window.fits(counts, limit) {
            [false, _] => return Err(throttled("requests")),
            [_, false] => return Err(throttled("tokens")),
            _ => {}
        }
        pool.in_flight += 1;
        pool.window.push(id, now, counts);
        Ok(self.slot(key, id, Served::OnDemand))
    }

    fn slot(&self, key: String, entry: u64, served: Served) -> Slot {
        Slot {
            quotas: self.clone(),
            key,
            entry,
            settled: None,
            served,
        }
    }
}

/// bedrock-mantle's throttling answer (its OpenAI-shaped body says `rate_limit_exceeded`).
fn mantle_throttled(what: &str) -> ApiError {
    ApiError::new(
        429,
        "rate_limit_exceeded",
        format!("Rate limit reached for {what} per minute. Please retry after a short wait."),
    )
}

/// Bedrock's throttling error. SageMaker has no modelled throttling error of its own; its
/// front end answers with the same code.
fn throttled(what: &str) -> ApiError {
    ApiError::new(
        429,
        "ThrottlingException",
        format!("Too many {what}, please wait before trying again."),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn perf(rpm: u64, tpm: u64) -> Performance {
        Performance {
            requests_per_minute: rpm,
            tokens_per_minute: tpm,
            ..Performance::default()
        }
    }

    fn demand<'a>(perf: &'a Performance, tier: &'a str, input: u64, max_out: u64) -> Demand<'a> {
        Demand {
            region: "us-east-1",
            target: "m",
            model: "m",
            tier,
            performance: perf,
            reservation: None,
            input_tokens: input,
            max_output_tokens: max_out,
            output_burndown: 1,
            mantle: None,
        }
    }

    #[test]
    fn mantle_counts_input_and_output_apart_and_frees_cache_reads() {
        let q = Quotas::new(Duration::from_secs(60));
        let p = Performance {
            max_concurrency: 8,
            ..perf(1, 1_000_000)
        };
        let mut d = demand(&p, "default", 600, 200);
        d.mantle = Some([1_000, 300]);
        // No requests-per-minute quota: the pool's own limits decide.
        let mut first = q.admit(&d).unwrap();
        assert_eq!(first.served, Served::Mantle);
        assert!(q.admit(&d).unwrap_err().message.contains("input tokens"));
        // It read 500 of its 600 input tokens from the cache and wrote 300 output tokens.
        first.settle_on(&d, 100, 0, 300);
        drop(first);
        assert!(q.admit(&d).unwrap_err().message.contains("output tokens"));
    }

    #[test]
    fn admission_counts_max_tokens_times_the_burndown_then_settles_on_actual_output() {
        let q = Quotas::new(Duration::from_secs(60));
        let p = perf(1000, 10_000);
        let mut d = demand(&p, "default", 1000, 1000);
        d.output_burndown = 5;
        // 1,000 + 5 x 1,000 = 6,000 of 10,000: a second such request does not fit.
        let mut first = q.admit(&d).unwrap();
        assert_eq!(
            q.admit(&d).unwrap_err().message,
            "Too many tokens, please wait before trying again."
        );
        // It answered 100 tokens: 1,000 + 500 counted, so the second now fits.
        first.settle_on(&d, 1000, 0, 100);
        drop(first);
        assert!(q.admit(&d).is_ok());
    }

    #[test]
    fn requests_per_minute_are_enforced_and_the_window_slides() {
        let q = Quotas::new(Duration::from_secs(60));
        let p = perf(2, 1_000_000);
        let d = demand(&p, "default", 1, 1);
        let now = Instant::now();
        drop(q.admit_at(&d, now).unwrap());
        drop(q.admit_at(&d, now).unwrap());
        assert_eq!(
            q.admit_at(&d, now).unwrap_err().message,
            "Too many requests, please wait before trying again."
        );
        let later = now + Duration::from_secs(60);
        assert!(
            q.admit_at(&d, later).is_ok(),
            "a minute later the window has room again"
        );
    }

    #[test]
    fn a_full_reservation_overflows_to_on_demand_and_then_throttles_with_it() {
        let q = Quotas::new(Duration::from_secs(60));
        let p = perf(1000, 1_000);
        let r = ReservationSpec {
            input_tokens_per_minute: 500,
            output_tokens_per_minute: 500,
        };
        let mut d = demand(&p, "reserved", 200, 200);
        d.reservation = Some(&r);
        let served: Vec<_> = (0..5).map(|_| q.admit(&d).map(|s| s.served)).collect();
        assert_eq!(served[0].as_ref().unwrap(), &Served::Reserved);
        assert_eq!(served[1].as_ref().unwrap(), &Served::Reserved);
        // 400 of 500 used: the third overflows to on-demand (1,000 TPM: two of 400 fit).
        assert_eq!(served[2].as_ref().unwrap(), &Served::Overflow);
        assert_eq!(served[3].as_ref().unwrap(), &Served::Overflow);
        assert_eq!(served[4].as_ref().unwrap_err().code, "ThrottlingException");
    }
}
