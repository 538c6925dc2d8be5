//! Targets' concurrency in the fleet's count: each replica leases a block of a target's slots
//! (one Lua script, which also keeps the fleet's limit), admits its attempts from the block in
//! process, and renews or gives back what it holds off the calls' path; a throttle's lesson is
//! published to the fleet at once.
//!
//! Key `{prefix}:conc:<region>|<id>`: a hash with `lim` (the fleet's limit), `taught` (when a
//! throttle last lowered it, unix ms) and `r:<replica>` = `<slots>|<expiry unix ms>`, one lease
//! per replica (a replica that stops renewing loses its lease when it expires).

use super::{Duration, Ordering, Shared};

/// Leases `want` slots of a target for replica `ARGV[1]` (never fewer than its `in_use`, never
/// more than the fleet's limit leaves), until `ttl` ms from now; the fleet's limit starts at
/// the replica's own and rises with it until a throttle lowers it, then a slot at a time
/// toward it, once per `probe_after` ms without a throttle. Returns
/// `{granted, limit, others, taught_ago}`: the slots granted, the fleet's limit (floored), the
/// slots the other replicas hold, and how long ago a throttle last lowered the limit (ms; -1
/// for never). Redis's own clock, so replicas' clocks do not matter.
pub(super) const LEASE: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local me = 'r:' .. ARGV[1]
local want, in_use = tonumber(ARGV[2]), tonumber(ARGV[3])
local ttl, mine_limit, probe_after = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local lim = tonumber(redis.call('HGET', KEYS[1], 'lim'))
local taught = tonumber(redis.call('HGET', KEYS[1], 'taught'))
if lim == nil or (mine_limit > lim and taught == nil) then
  lim = mine_limit
  redis.call('HSET', KEYS[1], 'lim', tostring(lim))
elseif mine_limit > lim then
  -- Taught: a slot at a time, once per probe_after since the lesson or the last rise, so a
  -- replica whose own limit is stale cannot lift a lesson in one step.
  local raised = tonumber(redis.call('HGET', KEYS[1], 'raised')) or 0
  if now - math.max(taught, raised) >= probe_after then
    lim = math.min(mine_limit, math.floor(lim) + 1)
    redis.call('HSET', KEYS[1], 'lim', tostring(lim), 'raised', now)
  end
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
local taught_ago = -1
if taught ~= nil then taught_ago = math.max(0, now - taught) end
return {granted, math.floor(lim), others, taught_ago}
"#;

/// A throttle's lesson for replica `ARGV[1]`: its limit `ARGV[2]`, learnt while it counted
/// `ARGV[3]` slots held by the others, corrected by what they hold now (a replica's count of
/// the others is as old as its last lease: one that leased first thinks itself alone), brings
/// the fleet's limit down (never up), stamped.
pub(super) const TEACH: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local me = 'r:' .. ARGV[1]
local taught, others_seen = tonumber(ARGV[2]), tonumber(ARGV[3])
local others = 0
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local f = all[i]
  if string.sub(f, 1, 2) == 'r:' and f ~= me then
    local held, exp = string.match(all[i + 1], '^(%d+)|(%d+)$')
    if held ~= nil and tonumber(exp) > now then
      others = others + tonumber(held)
    end
  end
end
local value = math.max(1, taught + others - others_seen)
local lim = tonumber(redis.call('HGET', KEYS[1], 'lim'))
if lim == nil or value < lim then
  redis.call('HSET', KEYS[1], 'lim', tostring(value))
end
redis.call('HSET', KEYS[1], 'taught', now)
redis.call('PEXPIRE', KEYS[1], 600000)
return value
"#;

/// A throttle's lesson, for the fleet: the limit this replica learnt, and the other
/// replicas' slots as it counted them then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lesson {
    /// This replica's limit of the target after the throttle.
    pub limit: u32,
    /// The slots it counted the other replicas holding.
    pub others_seen: u32,
}

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
    /// How long ago a throttle last taught the fleet's limit (never: `None`).
    pub taught_ago: Option<Duration>,
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
        let (granted, limit, others, taught_ago): (i64, i64, i64, i64) =
            self.run("lease", call.invoke_async(&mut conn)).await?;
        let n = |v: i64| u32::try_from(v.max(0)).unwrap_or(u32::MAX);
        Some(LeaseAnswer {
            granted: n(granted),
            limit: n(limit).max(1),
            others: n(others),
            taught_ago: u64::try_from(taught_ago).ok().map(Duration::from_millis),
        })
    }

    /// Publishes a throttle's lesson to the fleet, off the caller's path.
    pub fn teach_limit(self: &std::sync::Arc<Self>, region: &str, id: &str, lesson: Lesson) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if !self.usable() {
            return;
        }
        let (me, region, id) = (self.clone(), region.to_string(), id.to_string());
        handle.spawn(async move { me.teach(&region, &id, lesson).await });
    }

    /// Teaches the fleet a throttle's lesson (one round trip); returns the limit it taught
    /// after correcting it, `None` when Redis did not answer.
    pub async fn teach(&self, region: &str, id: &str, lesson: Lesson) -> Option<u32> {
        let key = self.conc_key(region, id);
        let mut conn = self.conn.clone();
        let mut call = self.teach.key(&key);
        call.arg(self.replica_id)
            .arg(lesson.limit.max(1))
            .arg(lesson.others_seen);
        let taught: i64 = self.run("teach", call.invoke_async(&mut conn)).await?;
        u32::try_from(taught).ok()
    }
}
