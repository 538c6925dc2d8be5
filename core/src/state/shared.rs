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
//! - `{prefix}:prefix:<sha-256 hex>`: where a prompt prefix was last cached
//!   (`region|target|expiry unix ms`), expiring with the cache entry.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redis::aio::ConnectionManager;
use redis::Script;

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

/// Admits `input`/`output` tokens if the window has room: returns `{1, second}` (the bucket
/// written, the ticket) or `{0, second}`. Redis's own clock, so replicas' clocks do not matter.
const ADMIT: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1])
local window = tonumber(ARGV[1])
local cap_in, cap_out = tonumber(ARGV[2]), tonumber(ARGV[3])
local want_in, want_out = tonumber(ARGV[4]), tonumber(ARGV[5])
local all = redis.call('HGETALL', KEYS[1])
local used_in, used_out = 0, 0
for i = 1, #all, 2 do
  local field = all[i]
  local sec = tonumber(string.sub(field, 1, -3))
  if sec <= now - window then
    redis.call('HDEL', KEYS[1], field)
  elseif string.sub(field, -1) == 'i' then
    used_in = used_in + tonumber(all[i + 1])
  else
    used_out = used_out + tonumber(all[i + 1])
  end
end
if used_in + want_in > cap_in or used_out + want_out > cap_out then
  return {0, now}
end
redis.call('HINCRBY', KEYS[1], now .. ':i', want_in)
redis.call('HINCRBY', KEYS[1], now .. ':o', want_out)
redis.call('EXPIRE', KEYS[1], window * 2 + 1)
return {1, now}
"#;

/// Calls admitted from this replica's lease: the estimate it took, to settle later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedTicket {
    input: u64,
    output: u64,
    lease_until: Instant,
}

/// Reserved tokens this replica leased from the fleet and has not used yet. Redis counts a lease
/// in the second it was taken; it is used only within the window after that.
#[derive(Debug, Clone, Copy)]
struct Lease {
    input: i64,
    output: i64,
    until: Instant,
}

/// A lease chunk is this share of the reservation, split between the replicas...
const LEASE_SHARE: f64 = 0.02;
/// ...or two calls' worth where that is more, up to this share: what a replica may hold unused
/// when the window closes, so the fleet's under-admission stays small.
const LEASE_MAX_SHARE: f64 = 0.05;

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

/// The published breakers whose open-until is a number; the others are counted and skipped.
fn parse_breakers(raw: HashMap<String, String>, malformed: &AtomicU64) -> HashMap<String, u64> {
    raw.into_iter()
        .filter_map(|(target, until)| match until.trim().parse::<u64>() {
            Ok(until) => Some((target, until)),
            Err(_) => {
                if malformed.fetch_add(1, Ordering::Relaxed) == 0 {
                    tracing::warn!(target = %target, "skipping a malformed breaker entry in Redis");
                }
                None
            }
        })
        .collect()
}

/// How long a fleet closure is remembered for a local half-open breaker to notice it.
const CLOSED_MEMORY_MS: u64 = 60_000;

/// The key naming one target in Redis.
pub fn target_key(region: &str, id: &str, tier: Option<crate::types::ServiceTier>) -> String {
    match tier {
        Some(t) => format!("{region}|{id}|{t}"),
        None => format!("{region}|{id}|"),
    }
}

/// A remote breaker as the planner sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteBreaker {
    /// Opened by a replica and within its open period: traffic goes elsewhere.
    Open,
    /// Its open period is over but nobody has closed it: a probe needs the lease.
    Probing,
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
        }
    }

    /// Runs one Redis operation within the timeout; an error or a timeout degrades.
    async fn run<T>(
        &self,
        what: &str,
        op: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Option<T> {
        match tokio::time::timeout(self.timeout, op).await {
            Ok(Ok(v)) => {
                self.succeeded();
                Some(v)
            }
            Ok(Err(e)) => {
                self.failed(what, &e);
                None
            }
            Err(_) => {
                self.failed(what, &format!("no answer within {:?}", self.timeout));
                None
            }
        }
    }

    /// Takes `input`/`output` tokens from the fleet's reservation of `model` (one Lua script):
    /// `Some(true)` taken, `Some(false)` full, `None` Redis did not answer.
    async fn take_from_fleet(
        &self,
        model: &str,
        window: Duration,
        capacity: (u64, u64),
        input: u64,
        output: u64,
    ) -> Option<bool> {
        let key = self.key(&format!("res:{model}"));
        let mut conn = self.conn.clone();
        let mut call = self.admit.key(&key);
        call.arg(window.as_secs().max(1))
            .arg(capacity.0)
            .arg(capacity.1)
            .arg(input)
            .arg(output);
        let (ok, _second): (i64, i64) = self.run("reserve", call.invoke_async(&mut conn)).await?;
        Some(ok == 1)
    }

    fn chunk(&self, capacity: (u64, u64), call: (u64, u64)) -> (u64, u64) {
        let replicas = f64::from(self.replicas.max(1));
        let size = |cap: u64, want: u64| {
            let base = (cap as f64 * LEASE_SHARE / replicas) as u64;
            let most = (cap as f64 * LEASE_MAX_SHARE / replicas) as u64;
            base.max((2 * want).min(most)).max(1)
        };
        (size(capacity.0, call.0), size(capacity.1, call.1))
    }

    /// Admits a call from this replica's lease if it holds enough.
    fn take_from_lease(
        &self,
        model: &str,
        now: Instant,
        input: u64,
        output: u64,
    ) -> Option<SharedTicket> {
        let mut leases = self.leases.lock().unwrap_or_else(|p| p.into_inner());
        let l = leases.get_mut(model)?;
        if l.until <= now || l.input < input as i64 || l.output < output as i64 {
            return None;
        }
        l.input -= input as i64;
        l.output -= output as i64;
        Some(SharedTicket {
            input,
            output,
            lease_until: l.until,
        })
    }

    /// Adds freshly leased tokens (valid for most of a window from now).
    fn add_to_lease(&self, model: &str, now: Instant, window: Duration, input: u64, output: u64) {
        let until = now + window.mul_f64(0.9);
        let mut leases = self.leases.lock().unwrap_or_else(|p| p.into_inner());
        let l = leases.entry(model.to_string()).or_insert(Lease {
            input: 0,
            output: 0,
            until,
        });
        if l.until <= now {
            *l = Lease {
                input: 0,
                output: 0,
                until,
            };
        }
        // Mixed lease tokens are used by the earlier deadline.
        l.input += input as i64;
        l.output += output as i64;
    }

    /// Admits a call against the fleet's reservation of `model`: from this replica's lease when
    /// it holds enough (no round trip; a refill starts in the background when it runs low),
    /// else by leasing what is missing. `Some(Some(ticket))` admitted, `Some(None)` full, `None`
    /// Redis did not answer (decide locally).
    pub async fn reserve(
        self: &std::sync::Arc<Self>,
        model: &str,
        window: Duration,
        capacity: (u64, u64),
        input: u64,
        output: u64,
    ) -> Option<Option<SharedTicket>> {
        let now = crate::time::now();
        let chunk = self.chunk(capacity, (input, output));
        if let Some(t) = self.take_from_lease(model, now, input, output) {
            self.health.admissions.fetch_add(1, Ordering::Relaxed);
            self.refill_if_low(model, window, capacity, chunk);
            return Some(Some(t));
        }
        self.health
            .waited_admissions
            .fetch_add(1, Ordering::Relaxed);
        let (have_in, have_out) = {
            let leases = self.leases.lock().unwrap_or_else(|p| p.into_inner());
            leases
                .get(model)
                .filter(|l| l.until > now)
                .map_or((0, 0), |l| (l.input.max(0) as u64, l.output.max(0) as u64))
        };
        let need = (
            input.saturating_sub(have_in),
            output.saturating_sub(have_out),
        );
        let generous = (need.0.max(chunk.0), need.1.max(chunk.1));
        for ask in [generous, need] {
            match self
                .take_from_fleet(model, window, capacity, ask.0, ask.1)
                .await?
            {
                true => {
                    self.add_to_lease(model, now, window, ask.0, ask.1);
                    if let Some(t) = self.take_from_lease(model, now, input, output) {
                        self.health.admissions.fetch_add(1, Ordering::Relaxed);
                        return Some(Some(t));
                    }
                }
                false if ask == need => break,
                false => {}
            }
        }
        Some(None)
    }

    /// Leases another chunk in the background when the lease runs below half a chunk.
    fn refill_if_low(
        self: &std::sync::Arc<Self>,
        model: &str,
        window: Duration,
        capacity: (u64, u64),
        chunk: (u64, u64),
    ) {
        let low = {
            let leases = self.leases.lock().unwrap_or_else(|p| p.into_inner());
            leases
                .get(model)
                .is_some_and(|l| l.input < (chunk.0 / 2) as i64 || l.output < (chunk.1 / 2) as i64)
        };
        if !low || !self.usable() {
            return;
        }
        if !self
            .refilling
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(model.to_string())
        {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            self.refilling
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(model);
            return;
        };
        let me = self.clone();
        let model = model.to_string();
        handle.spawn(async move {
            let now = crate::time::now();
            if me
                .take_from_fleet(&model, window, capacity, chunk.0, chunk.1)
                .await
                == Some(true)
            {
                me.add_to_lease(&model, now, window, chunk.0, chunk.1);
            }
            me.refilling
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&model);
        });
    }

    /// Settles a call admitted from the lease: what it did not use goes back to the lease (or
    /// what it used beyond its estimate is taken from it), if the lease is still current.
    pub fn settle(&self, model: &str, t: SharedTicket, input: u64, output: u64) {
        let mut leases = self.leases.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = leases.get_mut(model) {
            if l.until == t.lease_until && l.until > crate::time::now() {
                l.input += t.input as i64 - input as i64;
                l.output += t.output as i64 - output as i64;
            }
        }
    }

    /// Publishes that this replica opened a target's breaker until `open_for` from now.
    pub fn publish_open(self: &std::sync::Arc<Self>, target: String, open_for: Duration) {
        let now = unix_ms();
        let until = now + open_for.as_millis() as u64;
        self.remote_open
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(target.clone(), (until, now));
        let mut cmd = redis::cmd("HSET");
        cmd.arg(self.key("breakers")).arg(&target).arg(until);
        self.send_in_background("publish breaker", cmd);
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

    /// A probe succeeded: the target closes for everyone.
    pub fn publish_closed(self: &std::sync::Arc<Self>, target: String) {
        let known = self
            .remote_open
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&target)
            .is_some();
        if known {
            let mut cmd = redis::cmd("HDEL");
            cmd.arg(self.key("breakers")).arg(&target);
            self.send_in_background("close breaker", cmd);
        }
    }

    /// Whether Redis still holds the data it held at the last read: the epoch key is there and
    /// unchanged. When it is missing (a restart, a flush) a new one is written and absent
    /// breaker entries are not taken as closed this time.
    async fn same_epoch(&self, read: Option<String>, epoch_key: &str) -> bool {
        let read = match read {
            Some(e) => e,
            None => {
                let fresh = format!("{:x}", rand::random::<u64>());
                let mut conn = self.conn.clone();
                let _ = self
                    .run::<Option<String>>(
                        "write epoch",
                        redis::cmd("SET")
                            .arg(epoch_key)
                            .arg(&fresh)
                            .arg("NX")
                            .query_async(&mut conn),
                    )
                    .await;
                *self.epoch.lock().unwrap_or_else(|p| p.into_inner()) = None;
                return false;
            }
        };
        let mut known = self.epoch.lock().unwrap_or_else(|p| p.into_inner());
        let same = known.as_deref() == Some(read.as_str());
        *known = Some(read);
        same
    }

    /// Whether another replica's successful probe closed this target lately (consumed: it
    /// closes one local half-open breaker once).
    pub fn take_closed_by_fleet(&self, target: &str) -> bool {
        self.closed_by_fleet
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(target)
            .is_some()
    }

    /// The remote breaker of a target, if the fleet has one open or probing.
    pub fn remote_breaker(&self, target: &str) -> Option<RemoteBreaker> {
        let map = self.remote_open.read().unwrap_or_else(|p| p.into_inner());
        if map.is_empty() {
            return None;
        }
        let (until, _) = *map.get(target)?;
        Some(if unix_ms() < until {
            RemoteBreaker::Open
        } else {
            RemoteBreaker::Probing
        })
    }

    /// Takes the fleet-wide probe lease of a target for `ttl`: only its holder probes.
    /// Without Redis, each replica probes on its own (as without shared state).
    pub async fn take_probe_lease(&self, target: &str, ttl: Duration) -> bool {
        if !self.usable() {
            return true;
        }
        let key = self.key(&format!("probe:{target}"));
        let mut conn = self.conn.clone();
        let reply: Option<Option<String>> = self
            .run(
                "probe lease",
                redis::cmd("SET")
                    .arg(&key)
                    .arg(1)
                    .arg("NX")
                    .arg("PX")
                    .arg(ttl.as_millis().max(1) as u64)
                    .query_async(&mut conn),
            )
            .await;
        match reply {
            Some(ok) => ok.is_some(),
            None => true,
        }
    }

    /// One tick of the background task: while degraded, checks whether Redis is back;
    /// otherwise reads the published breakers.
    pub async fn tick(&self, stale_after: Duration) {
        if self.usable() {
            self.sync_breakers(stale_after).await;
        } else {
            // A keyed read, not PING: it goes to the node serving this router's slot (a
            // cluster's PING asks every node), and a server that answers PING but MOVED for
            // keys (a cluster this client was not told about) stays degraded.
            let mut conn = self.conn.clone();
            let _ = self
                .run::<Option<String>>(
                    "check",
                    redis::cmd("GET")
                        .arg(self.key("epoch"))
                        .query_async(&mut conn),
                )
                .await;
        }
    }

    /// Reads every published breaker (and forgets entries long past their time).
    pub async fn sync_breakers(&self, stale_after: Duration) {
        let key = self.key("breakers");
        let mut conn = self.conn.clone();
        let epoch_key = self.key("epoch");
        let Some((raw, epoch)) = self
            .run::<(HashMap<String, String>, Option<String>)>(
                "read breakers",
                redis::pipe()
                    .cmd("HGETALL")
                    .arg(&key)
                    .cmd("GET")
                    .arg(&epoch_key)
                    .query_async(&mut conn),
            )
            .await
        else {
            return;
        };
        let continuous = self.same_epoch(epoch, &epoch_key).await;
        // One foreign or corrupt entry must not stop the fleet's breakers from syncing.
        let all = parse_breakers(raw, &self.health.malformed_values);
        let now = unix_ms();
        let stale: Vec<&String> = all
            .iter()
            .filter(|(_, until)| **until + stale_after.as_millis() as u64 <= now)
            .map(|(k, _)| k)
            .collect();
        if !stale.is_empty() {
            let _ = self
                .run::<i64>(
                    "expire breakers",
                    redis::cmd("HDEL")
                        .arg(&key)
                        .arg(&stale)
                        .query_async(&mut conn),
                )
                .await;
        }
        let mut fresh: HashMap<String, (u64, u64)> = all
            .iter()
            .filter(|(_, until)| **until + stale_after.as_millis() as u64 > now)
            .map(|(k, v)| (k.clone(), (*v, 0)))
            .collect();
        let mut map = self.remote_open.write().unwrap_or_else(|p| p.into_inner());
        {
            // Entries read from Redis last time and gone now (not by our own expiry): another
            // replica's probe closed them. Only while Redis kept its data.
            let mut closed = self
                .closed_by_fleet
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            closed.retain(|_, noticed| now.saturating_sub(*noticed) < CLOSED_MEMORY_MS);
            if continuous {
                for (k, (until, published)) in map.iter() {
                    let expired = *until + stale_after.as_millis() as u64 <= now;
                    if *published == 0 && !fresh.contains_key(k) && !expired {
                        closed.insert(k.clone(), now);
                    }
                }
            }
            for k in fresh.keys() {
                closed.remove(k);
            }
        }
        // What this replica published a moment ago may not have reached Redis yet.
        let recent = now.saturating_sub(2 * self.sync_interval.as_millis() as u64);
        for (k, (until, published)) in map.iter() {
            if *published >= recent {
                fresh.entry(k.clone()).or_insert((*until, *published));
            }
        }
        *map = fresh;
        self.health.breaker_syncs.fetch_add(1, Ordering::Relaxed);
    }
}

fn hex(digest: &[u8; 32]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(64);
    for b in digest {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Where a prefix is cached: region, target, and when the entry expires (unix ms).
pub type CachedAt = (String, String, u64);

impl Shared {
    /// Publishes where prefixes were just cached, off the caller's path (one pipeline).
    pub fn publish_prefixes(self: &std::sync::Arc<Self>, entries: Vec<([u8; 32], CachedAt)>) {
        if entries.is_empty() || !self.usable() {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let me = self.clone();
        handle.spawn(async move {
            let mut pipe = redis::pipe();
            let now = unix_ms();
            for (digest, (region, target, expires)) in &entries {
                let ttl = expires.saturating_sub(now).max(1);
                pipe.cmd("SET")
                    .arg(me.key(&format!("prefix:{}", hex(digest))))
                    .arg(format!("{region}|{target}|{expires}"))
                    .arg("PX")
                    .arg(ttl)
                    .ignore();
            }
            let mut conn = me.conn.clone();
            if me
                .run::<()>("publish prefixes", pipe.query_async(&mut conn))
                .await
                .is_some()
            {
                me.health.prefixes_published.fetch_add(1, Ordering::Relaxed);
            }
        });
    }

    /// Where other replicas cached these prefixes (one MGET); `None` when Redis did not answer.
    pub async fn lookup_prefixes(&self, digests: &[[u8; 32]]) -> Option<Vec<Option<CachedAt>>> {
        let keys: Vec<String> = digests
            .iter()
            .map(|d| self.key(&format!("prefix:{}", hex(d))))
            .collect();
        let mut conn = self.conn.clone();
        let values: Vec<Option<String>> = self
            .run(
                "read prefixes",
                redis::cmd("MGET").arg(&keys).query_async(&mut conn),
            )
            .await?;
        Some(
            values
                .into_iter()
                .map(|v| {
                    let v = v?;
                    let mut parts = v.rsplitn(3, '|');
                    let expires = parts.next()?.parse().ok()?;
                    let target = parts.next()?.to_string();
                    let region = parts.next()?.to_string();
                    Some((region, target, expires))
                })
                .collect(),
        )
    }
}

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
            target_key("us-east-1", "m", Some(crate::types::ServiceTier::Flex)),
            "us-east-1|m|flex"
        );
        assert_eq!(target_key("us-east-1", "m", None), "us-east-1|m|");
    }
}
