//! What the fleet knows of its targets' latency and its ejected regions: each replica
//! publishes its targets' latency in brief (at most a few hundred, each second they changed)
//! under its own name and each region it ejects (at once), and reads the others', so that a
//! new replica starts from the fleet's figures and no replica rediscovers a stall the fleet
//! already knows. A target's figure is the best-informed replica's (the most observations):
//! a replica that has seen a target twice does not overwrite what another learnt from
//! hundreds of answers.

use super::{Duration, HashMap, Ordering, Shared, unix_ms};
use crate::state::LatencySummary;

/// How long a published summary is read: a replica long gone says nothing of now.
pub const SUMMARY_MAX_AGE: Duration = Duration::from_secs(600);

/// Between a target's key and the publishing replica's name in the latency hash's fields.
const REPLICA_MARK: char = '#';

/// What the fleet knew when read: targets' latency (fresh ones) and ejected regions with
/// until when (unix milliseconds, not yet past).
#[derive(Debug, Default)]
pub struct FleetKnowledge {
    /// Targets' latency, by target key.
    pub latency: Vec<(String, LatencySummary)>,
    /// Ejected regions and until when.
    pub ejected: Vec<(String, u64)>,
}

impl Shared {
    /// Publishes this replica's targets' latency (one round trip, off the caller's path).
    pub fn publish_latency(self: &std::sync::Arc<Self>, summaries: &[(String, LatencySummary)]) {
        if summaries.is_empty() || !self.usable() {
            return;
        }
        let key = self.key("latency");
        let mut pipe = redis::pipe();
        let hset = pipe.cmd("HSET").arg(&key);
        for (target, s) in summaries {
            let Ok(json) = serde_json::to_string(s) else {
                continue;
            };
            hset.arg(format!("{target}{REPLICA_MARK}{:x}", self.replica_id))
                .arg(json);
        }
        hset.ignore();
        // Readers delete the fields of replicas silent past the summaries' age (a replica that
        // republishes between that read and the delete loses that one write, and writes again
        // at its next publish); the hash goes once no replica has written it for twice their
        // age.
        pipe.cmd("PEXPIRE")
            .arg(&key)
            .arg(2 * SUMMARY_MAX_AGE.as_millis() as u64)
            .ignore();
        self.publish("publish latency", pipe);
    }

    /// Publishes that this replica ejected `region` until `until_ms` (unix milliseconds).
    pub fn publish_ejection(self: &std::sync::Arc<Self>, region: &str, until_ms: u64) {
        let key = self.key("ejected");
        let mut pipe = redis::pipe();
        pipe.cmd("HSET")
            .arg(&key)
            .arg(region)
            .arg(until_ms)
            .ignore();
        // The hash outlives its latest ejection a while, then goes.
        pipe.cmd("PEXPIRE")
            .arg(&key)
            .arg(
                until_ms
                    .saturating_sub(unix_ms())
                    .max(1)
                    .saturating_add(600_000),
            )
            .ignore();
        self.publish("publish ejection", pipe);
    }

    /// Sends writes off the caller's path, uncounted.
    fn write_behind(&self, pipe: redis::Pipeline) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut conn = self.conn.clone();
        let timeout = self.timeout();
        handle.spawn(async move {
            // A lost delete is retried by the next read: nothing to report.
            let _ = tokio::time::timeout(timeout, pipe.query_async::<()>(&mut conn)).await;
        });
    }

    /// Sends writes off the caller's path, counting them once done.
    fn publish(self: &std::sync::Arc<Self>, what: &'static str, pipe: redis::Pipeline) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let me = self.clone();
        handle.spawn(async move {
            let mut conn = me.conn.clone();
            if me
                .run::<()>(what, pipe.query_async(&mut conn))
                .await
                .is_some()
            {
                me.health.latency_published.fetch_add(1, Ordering::Relaxed);
            }
        });
    }

    /// Reads what the fleet knows (one round trip), skipping entries gone stale. `None` when
    /// Redis does not answer within `within`.
    pub async fn read_fleet(&self, within: Duration) -> Option<FleetKnowledge> {
        if !self.usable() {
            return None;
        }
        let (latency_key, ejected_key) = (self.key("latency"), self.key("ejected"));
        let mut conn = self.conn.clone();
        let (latency, ejected) = self
            .run_within::<(HashMap<String, String>, HashMap<String, String>)>(
                "read fleet latency",
                within,
                redis::pipe()
                    .cmd("HGETALL")
                    .arg(&latency_key)
                    .cmd("HGETALL")
                    .arg(&ejected_key)
                    .query_async(&mut conn),
            )
            .await?;
        self.health.fleet_reads.fetch_add(1, Ordering::Relaxed);
        let now = unix_ms();
        let mut known = FleetKnowledge::default();
        let malformed = || {
            self.health.malformed_values.fetch_add(1, Ordering::Relaxed);
        };
        let me = format!("{:x}", self.replica_id);
        let mut best: HashMap<String, LatencySummary> = HashMap::default();
        let mut stale = Vec::new();
        for (field, value) in latency {
            let Some((target, replica)) = field.rsplit_once(REPLICA_MARK) else {
                // A field of a replica from before figures were published per replica (a
                // rolling upgrade): its writer's figures are not told apart, so it goes.
                stale.push(field);
                continue;
            };
            match serde_json::from_str::<LatencySummary>(&value) {
                // What this replica published, it knows better itself.
                Ok(_) if replica == me => {}
                Ok(s) if s.is_fresh(now, SUMMARY_MAX_AGE) => {
                    let better = best
                        .get(target)
                        .is_none_or(|b| (s.samples, s.at_ms) > (b.samples, b.at_ms));
                    if better {
                        best.insert(target.to_string(), s);
                    }
                }
                Ok(_) => stale.push(field),
                Err(_) => malformed(),
            }
        }
        known.latency.extend(best);
        if !stale.is_empty() {
            // A replica refreshes its figures at least every few minutes: one silent for
            // longer is gone, and its fields go with it (the hash stays bounded as replicas
            // come and go).
            let mut pipe = redis::pipe();
            pipe.cmd("HDEL").arg(&latency_key).arg(stale).ignore();
            self.write_behind(pipe);
        }
        for (region, until) in ejected {
            match until.trim().parse::<u64>() {
                Ok(until) if until > now => known.ejected.push((region, until)),
                Ok(_) => {}
                Err(_) => malformed(),
            }
        }
        Some(known)
    }
}
