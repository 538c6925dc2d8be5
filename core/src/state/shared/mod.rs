//! State shared by every replica through Redis: the reserved-capacity ledger (replicas lease
//! small chunks of the reservation with one atomic Lua script and admit calls from their lease
//! in process, so most calls make no round trip), circuit breakers (an open breaker is published at once and
//! read by the others every `sync_interval`; half-open probes take a fleet-wide lease), with a
//! fallback to local state whenever Redis is slow or down.
//!
//! Keys (all under one hash tag, `{prefix}`, so that they share a Redis Cluster slot):
//! - `{prefix}:res:<model>`: a hash of per-second buckets, `<unix second>:i` and `:o`, of input
//!   and output tokens admitted against the model's reservation;
//! - `{prefix}:breakers`: a hash, target → unix milliseconds until which its breaker is open;
//! - `{prefix}:probe:<target>`: the half-open probe lease of a target;
//! - `{prefix}:conc:<region>|<id>`: a target's concurrency: the fleet's limit and each
//!   replica's lease of its slots (`concurrency.rs`);
//! - `{prefix}:prefix:<sha-256 hex>`: where a prompt prefix was last cached
//!   (`region|target|expiry unix ms`), expiring with the cache entry;
//! - `{prefix}:latency`: a hash, target → its latency in brief (JSON: quantiles, samples, when),
//!   each replica's targets, read by new replicas;
//! - `{prefix}:ejected`: a hash, region → unix milliseconds until which a replica ejected it.
//!
//! One concern a file, each an `impl Shared` block: `capacity.rs` (reservations and quotas),
//! `concurrency.rs` (targets' slots), `breakers.rs`, `prefixes.rs`, `latency.rs` (targets'
//! latency and ejected regions); here, the connection, its health and the sync task.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redis::Script;
use redis::aio::ConnectionManager;

mod breakers;
mod capacity;
mod concurrency;
mod latency;
mod prefixes;

pub use breakers::{RemoteBreaker, target_key};
pub use capacity::SharedTicket;
use capacity::{ADMIT, Lease};
pub use concurrency::{LeaseAnswer, LeaseAsk, Lesson};
pub use latency::{FleetKnowledge, SUMMARY_MAX_AGE};

/// A connection to one Redis server (reconnecting), or to a Redis Cluster (following its
/// slots and failovers): every command and script below goes through either.
#[derive(Clone)]
enum Conn {
    Server(ConnectionManager),
    Cluster(redis::cluster_async::ClusterConnection),
}

impl redis::aio::ConnectionLike for Conn {
    fn req_packed_command<'a>(
        &'a mut self,
        cmd: &'a redis::Cmd,
    ) -> redis::RedisFuture<'a, redis::Value> {
        match self {
            Conn::Server(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<redis::Value>> {
        match self {
            Conn::Server(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Server(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

use crate::config::SharedConfig;

/// Redis reachable or not, and since when.
#[derive(Debug, Default)]
struct Health {
    /// Calls do not wait for Redis while set; the sync task pings until it answers again.
    degraded: AtomicBool,
    episodes: AtomicU64,
    fallback_admissions: AtomicU64,
    admissions: AtomicU64,
    waited_admissions: AtomicU64,
    malformed_values: AtomicU64,
    breaker_syncs: AtomicU64,
    prefixes_published: AtomicU64,
    latency_published: AtomicU64,
    fleet_reads: AtomicU64,
    lease_round_trips: AtomicU64,
    lease_waits: AtomicU64,
}

/// Now, in unix milliseconds (the clock shared entries are stamped with).
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

pub use crate::telemetry::SharedStatus;

/// The Redis side of the router's state.
pub struct Shared {
    conn: Conn,
    prefix: String,
    timeout: Duration,
    pub(crate) replicas: u32,
    pub(crate) sync_interval: Duration,
    health: Health,
    admit: Script,
    lease: Script,
    teach: Script,
    /// This replica's name in the fleet's leases of targets' slots.
    replica_id: u64,
    leases: Mutex<HashMap<String, Lease>>,
    refilling: Mutex<HashSet<String>>,
    /// Targets whose breaker another replica (or this one) published as open: until when
    /// (unix ms), and when this replica published it (0 when read from Redis).
    remote_open: RwLock<HashMap<String, (u64, u64)>>,
    /// Targets whose published breaker another replica removed (its probe succeeded), with
    /// when this replica noticed (unix ms): only these close a local half-open breaker. An
    /// entry missing because Redis restarted empty closes nothing.
    closed_by_fleet: Mutex<HashMap<String, u64>>,
    /// The value of the epoch key when last read: it changes (or vanishes) when Redis lost its
    /// data, and then absent entries say nothing.
    epoch: Mutex<Option<String>>,
}

impl Shared {
    /// Connects lazily: a router starts even while Redis is down. (A cluster's connection is
    /// made on the tokio runtime this is called on.)
    pub fn new(config: &SharedConfig) -> redis::RedisResult<Self> {
        let connect_within = config.timeout.max(Duration::from_millis(200));
        let conn = if config.cluster {
            let client = redis::cluster::ClusterClientBuilder::new([config.redis_url.as_str()])
                .connection_timeout(connect_within)
                .response_timeout(config.timeout)
                // A call waits `timeout` at most anyway; the client's own retries (after a
                // MOVED or a failover) stay within it.
                .retries(2)
                .min_retry_wait(5)
                .max_retry_wait(50)
                .build()?;
            let settings = redis::cluster::ClusterConfig::new()
                .set_connection_timeout(connect_within)
                .set_response_timeout(config.timeout);
            Conn::Cluster(client.get_pending_async_connection_with_config(settings))
        } else {
            let client = redis::Client::open(config.redis_url.as_str())?;
            let manager = redis::aio::ConnectionManagerConfig::new()
                .set_response_timeout(Some(config.timeout))
                .set_connection_timeout(Some(connect_within))
                .set_number_of_retries(1);
            Conn::Server(ConnectionManager::new_lazy_with_config(client, manager)?)
        };
        Ok(Self {
            conn,
            prefix: format!("{{{}}}", config.key_prefix),
            timeout: config.timeout,
            replicas: config.replicas,
            sync_interval: config.sync_interval,
            health: Health::default(),
            admit: Script::new(ADMIT),
            lease: Script::new(concurrency::LEASE),
            teach: Script::new(concurrency::TEACH),
            replica_id: rand::random(),
            leases: Mutex::default(),
            refilling: Mutex::default(),
            remote_open: RwLock::default(),
            closed_by_fleet: Mutex::default(),
            epoch: Mutex::default(),
        })
    }

    fn key(&self, parts: &str) -> String {
        format!("{}:{parts}", self.prefix)
    }

    /// The longest a call waits for Redis (`[shared].timeout`).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Whether calls should ask Redis now.
    pub fn usable(&self) -> bool {
        !self.health.degraded.load(Ordering::Relaxed)
    }

    fn failed(&self, what: &str, e: &dyn std::fmt::Display) {
        if !self.health.degraded.swap(true, Ordering::Relaxed) {
            self.health.episodes.fetch_add(1, Ordering::Relaxed);
            let error = e.to_string();
            // A server that answers MOVED is a cluster this client was not told about.
            let hint = if error.contains("MOVED") || error.contains("CLUSTERDOWN") {
                ": the server is a Redis Cluster; set shared.cluster = true"
            } else {
                ""
            };
            tracing::warn!(
                error = %error,
                "laneway: shared state unusable ({what}{hint}); using local state with 1/{} of each reservation until it answers",
                self.replicas
            );
        }
    }

    fn succeeded(&self) {
        if self.health.degraded.swap(false, Ordering::Relaxed) {
            tracing::info!("laneway: Redis is back; shared state resumed");
        }
    }

    /// Counts a reserved admission decided locally.
    pub fn note_fallback(&self) {
        self.health
            .fallback_admissions
            .fetch_add(1, Ordering::Relaxed);
    }

    /// How the shared state is doing now (degraded or not) and its counters, for metrics.
    pub fn status(&self) -> SharedStatus {
        SharedStatus {
            degraded: self.health.degraded.load(Ordering::Relaxed),
            degraded_episodes: self.health.episodes.load(Ordering::Relaxed),
            fallback_admissions: self.health.fallback_admissions.load(Ordering::Relaxed),
            admissions: self.health.admissions.load(Ordering::Relaxed),
            waited_admissions: self.health.waited_admissions.load(Ordering::Relaxed),
            malformed_values: self.health.malformed_values.load(Ordering::Relaxed),
            breaker_syncs: self.health.breaker_syncs.load(Ordering::Relaxed),
            prefixes_published: self.health.prefixes_published.load(Ordering::Relaxed),
            latency_published: self.health.latency_published.load(Ordering::Relaxed),
            fleet_reads: self.health.fleet_reads.load(Ordering::Relaxed),
            lease_round_trips: self.health.lease_round_trips.load(Ordering::Relaxed),
            lease_waits: self.health.lease_waits.load(Ordering::Relaxed),
        }
    }

    /// Runs one Redis operation within the timeout; an error or a timeout degrades.
    async fn run<T>(
        &self,
        what: &str,
        op: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Option<T> {
        self.run_within(what, self.timeout, op).await
    }

    /// [`Shared::run`] within `within` instead of the timeout.
    async fn run_within<T>(
        &self,
        what: &str,
        within: Duration,
        op: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Option<T> {
        match tokio::time::timeout(within, op).await {
            Ok(Ok(v)) => {
                self.succeeded();
                Some(v)
            }
            Ok(Err(e)) => {
                self.failed(what, &e);
                None
            }
            Err(_) => {
                self.failed(what, &format!("no answer within {within:?}"));
                None
            }
        }
    }

    /// Sends one command off the caller's path (when a runtime is there to run it).
    fn send_in_background(self: &std::sync::Arc<Self>, what: &'static str, cmd: redis::Cmd) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let me = self.clone();
        handle.spawn(async move {
            let mut conn = me.conn.clone();
            me.run::<redis::Value>(what, cmd.query_async(&mut conn))
                .await;
        });
    }
}

/// Where a prefix is cached: region, target, and when the entry expires (unix ms).
pub type CachedAt = (String, String, u64);

/// Keeps the breaker view fresh while the router lives.
pub fn spawn_sync(shared: &std::sync::Arc<Shared>, stale_after: Duration) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let weak = std::sync::Arc::downgrade(shared);
    let every = shared.sync_interval;
    handle.spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(shared) = weak.upgrade() else { return };
            shared.tick(stale_after).await;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::breakers::parse_breakers;
    use super::*;

    fn shared(replicas: u32) -> Shared {
        Shared::new(&SharedConfig {
            redis_url: "redis://127.0.0.1:1/0".into(),
            key_prefix: "t".into(),
            replicas,
            timeout: Duration::from_millis(50),
            sync_interval: Duration::from_millis(200),
            cluster: false,
        })
        .unwrap()
    }

    proptest::proptest! {
        /// Whatever another writer left in the breakers hash: numbers are read, the rest
        /// skipped and counted, never a failed sync.
        #[test]
        fn any_breaker_hash_is_read_without_failing(
            entries in proptest::collection::hash_map("\\PC{0,12}", proptest::prop_oneof![
                "[0-9]{1,19}",
                "\\PC{0,12}",
                proptest::strategy::Just("18446744073709551616".to_string()),
                proptest::strategy::Just("-1".to_string()),
            ], 0..16)
        ) {
            let counter = AtomicU64::new(0);
            let numeric = entries.values().filter(|v| v.trim().parse::<u64>().is_ok()).count();
            let parsed = parse_breakers(entries.clone(), &counter);
            proptest::prop_assert_eq!(parsed.len(), numeric);
            proptest::prop_assert_eq!(counter.load(Ordering::Relaxed) as usize, entries.len() - numeric);
        }
    }

    #[test]
    fn malformed_breaker_entries_are_skipped_and_counted() {
        let counter = AtomicU64::new(0);
        let raw: HashMap<String, String> = [
            ("us-east-1|a|", "1700000000000"),
            ("us-west-2|b|", "not-a-number"),
            ("eu-west-1|c|", "-5"),
            ("eu-west-1|d|", " 42 "),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let parsed = parse_breakers(raw, &counter);
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed["us-east-1|a|"], 1_700_000_000_000);
        assert_eq!(parsed["eu-west-1|d|"], 42);
        assert_eq!(counter.load(Ordering::Relaxed), 2);
    }

    #[tokio::test]
    async fn lease_chunks_are_a_small_share_or_two_calls_within_a_cap() {
        let s = shared(4);
        // 2% of 1M split four ways: 5,000 tokens; two calls of 100 are less.
        assert_eq!(s.chunk((1_000_000, 1_000_000), (100, 100)), (5_000, 5_000));
        // Two calls of 4,000 are more than 5,000 but under the 5% cap (12,500).
        assert_eq!(s.chunk((1_000_000, 1_000_000), (4_000, 0)).0, 8_000);
        // Calls larger than the cap get the cap; a call bigger than that leases what it needs.
        assert_eq!(s.chunk((1_000_000, 1_000_000), (50_000, 0)).0, 12_500);
        assert_eq!(s.chunk((10, 10), (0, 0)), (1, 1));
    }

    #[tokio::test]
    async fn a_lease_admits_until_spent_and_takes_back_what_calls_did_not_use() {
        let s = shared(1);
        let now = crate::time::now();
        s.add_to_lease("m", now, Duration::from_secs(60), 100, 10);
        let t = s.take_from_lease("m", now, 60, 6).unwrap();
        assert!(
            s.take_from_lease("m", now, 60, 6).is_none(),
            "only 40 input left"
        );
        s.settle("m", t, 20, 2);
        assert!(
            s.take_from_lease("m", now, 80, 8).is_some(),
            "40 + 40 returned"
        );
        assert!(
            s.take_from_lease("m", now + Duration::from_secs(55), 1, 0)
                .is_none(),
            "expired"
        );
    }

    #[test]
    fn target_keys_name_region_id_and_tier() {
        assert_eq!(
            target_key("us-east-1", "m", Some(crate::types::ServiceTier::FLEX)),
            "us-east-1|m|flex"
        );
        assert_eq!(target_key("us-east-1", "m", None), "us-east-1|m|");
    }
}
