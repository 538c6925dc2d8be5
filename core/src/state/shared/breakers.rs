//! Breakers shared by the fleet: an open breaker published for the others, the fleet's breakers
//! read back on a timer, and one probe lease per target when an open period ends.

use super::{AtomicU64, Duration, HashMap, Ordering, Shared, unix_ms};

/// The published breakers whose open-until is a number; the others are counted and skipped.
pub(super) fn parse_breakers(
    raw: HashMap<String, String>,
    malformed: &AtomicU64,
) -> HashMap<String, u64> {
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
pub(super) const CLOSED_MEMORY_MS: u64 = 60_000;

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
    pub(super) async fn same_epoch(&self, read: Option<String>, epoch_key: &str) -> bool {
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
