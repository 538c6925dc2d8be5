//! Targets' concurrency in the fleet's count: each replica leases a block of a target's slots
//! (one Lua script, which also keeps the fleet's limit), admits its attempts from the block in
//! process, and renews or gives back what it holds off the calls' path; a throttle's lesson is
//! published to the fleet at once.
//!
//! Key `{prefix}:conc:<region>|<id>`: a hash with `lim` (the fleet's limit), `taught` (when a
//! throttle last lowered it, unix ms) and `r:<replica>` = `<slots>|<expiry unix ms>`, one lease
//! per replica (a replica that stops renewing loses its lease when it expires).

use super::*;

/// Leases `want` slots of a target for replica `ARGV[1]` (never fewer than its `in_use`, never
/// more than the fleet's limit leaves), until `ttl` ms from now; the fleet's limit starts at
/// the replica's own and rises to it once no throttle lowered it for `probe_after` ms. Returns
/// `{granted, limit, others}`: the slots granted, the fleet's limit (floored) and the slots the
/// other replicas hold. Redis's own clock, so replicas' clocks do not matter.
pub(super) const LEASE: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local me = 'r:' .. ARGV[1]
local want, in_use = tonumber(ARGV[2]), tonumber(ARGV[3])
local ttl, mine_limit, probe_after = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local lim = tonumber(redis.call('HGET', KEYS[1], 'lim'))
local taught = tonumber(redis.call('HGET', KEYS[1], 'taught'))
if lim == nil or (mine_limit > lim and (taught == nil or now - taught >= probe_after)) then
  lim = mine_limit
  redis.call('HSET', KEYS[1], 'lim', tostring(lim))
end
local all = redis.call('HGETALL', KEYS[1])
local others = 0
for i = 1, #all, 2 do
  local f = all[i]
  if string.sub(f, 1, 2) == 'r:' and f ~= me then
    local held, exp = string.match(all[i + 1], '^(%d+)|(%d+)$')
    if held == nil or tonumber(exp) <= now then
      redis.call('HDEL', KEYS[1], f)
    else
      others = others + tonumber(held)
    end
  end
end
local granted = math.min(want, math.max(0, math.floor(lim) - others))
if granted < in_use then granted = in_use end
if granted > 0 then
  redis.call('HSET', KEYS[1], me, granted .. '|' .. (now + ttl))
else
  redis.call('HDEL', KEYS[1], me)
end
redis.call('PEXPIRE', KEYS[1], math.max(ttl * 4, 600000))
return {granted, math.floor(lim), others}
"#;

/// A throttle's lesson: the fleet's limit comes down to `ARGV[1]` (never up), stamped.
pub(super) const TEACH: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lim = tonumber(redis.call('HGET', KEYS[1], 'lim'))
local value = tonumber(ARGV[1])
if lim == nil or value < lim then
  redis.call('HSET', KEYS[1], 'lim', tostring(value))
end
redis.call('HSET', KEYS[1], 'taught', now)
redis.call('PEXPIRE', KEYS[1], 600000)
return 1
"#;

/// What a lease asks of the fleet.
#[derive(Debug, Clone, Copy)]
pub struct LeaseAsk {
    /// Slots wanted in all (what is in use and a block more, or what is in use when giving
    /// back).
    pub want: u32,
    /// Slots this replica may be using when the answer comes (those in use now, and those it
    /// holds and keeps admitting from meanwhile): never taken back.
    pub in_use: u32,
    /// This replica's own limit of the target.
    pub limit: u32,
    /// The ask's number at this replica (not sent): an answer to an older ask than the latest
    /// is stale.
    pub seq: u64,
}

/// The fleet's answer to a lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseAnswer {
    /// Slots this replica holds now.
    pub granted: u32,
    /// The fleet's limit of the target.
    pub limit: u32,
    /// Slots the other replicas hold.
    pub others: u32,
}

impl Shared {
    fn conc_key(&self, region: &str, id: &str) -> String {
        self.key(&format!("conc:{region}|{id}"))
    }

    /// How long a lease lives without renewal: a few sync intervals, at least two seconds.
    pub(crate) fn lease_ttl(&self) -> Duration {
        (self.sync_interval * 4).max(Duration::from_secs(2))
    }

    /// Leases slots of a target from the fleet (one round trip; `on_call` when a call waits for
    /// it, else a renewal); `None` when Redis did not answer (the caller decides locally).
    pub async fn lease_slots(
        &self,
        region: &str,
        id: &str,
        ask: LeaseAsk,
        probe_after: Duration,
        on_call: bool,
    ) -> Option<LeaseAnswer> {
        let key = self.conc_key(region, id);
        let mut conn = self.conn.clone();
        let mut call = self.lease.key(&key);
        call.arg(self.replica_id)
            .arg(ask.want)
            .arg(ask.in_use)
            .arg(u64::try_from(self.lease_ttl().as_millis()).unwrap_or(u64::MAX))
            .arg(ask.limit.max(1))
            .arg(u64::try_from(probe_after.as_millis()).unwrap_or(u64::MAX));
        self.health
            .lease_round_trips
            .fetch_add(1, Ordering::Relaxed);
        if on_call {
            self.health.lease_waits.fetch_add(1, Ordering::Relaxed);
        }
        let (granted, limit, others): (i64, i64, i64) =
            self.run("lease", call.invoke_async(&mut conn)).await?;
        let n = |v: i64| u32::try_from(v.max(0)).unwrap_or(u32::MAX);
        Some(LeaseAnswer {
            granted: n(granted),
            limit: n(limit).max(1),
            others: n(others),
        })
    }

    /// Publishes a throttle's lesson, `limit`, to the fleet, off the caller's path.
    pub fn teach_limit(self: &std::sync::Arc<Self>, region: &str, id: &str, limit: u32) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if !self.usable() {
            return;
        }
        let key = self.conc_key(region, id);
        let me = self.clone();
        handle.spawn(async move {
            let mut conn = me.conn.clone();
            let mut call = me.teach.key(&key);
            call.arg(limit.max(1));
            me.run::<i64>("teach", call.invoke_async(&mut conn)).await;
        });
    }
}
