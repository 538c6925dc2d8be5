//! Reservations and quotas in the fleet's count: calls admitted by a Lua script against the
//! fleet's ledger, in leases that cut round trips, and settled when they end.

use super::{Duration, Instant, Ordering, Shared};

/// Admits `input`/`output` tokens if the window has room: returns `{1, second}` (the bucket
/// written, the ticket) or `{0, second}`. Redis's own clock, so replicas' clocks do not matter.
pub(super) const ADMIT: &str = r#"
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
pub(super) struct Lease {
    input: i64,
    output: i64,
    until: Instant,
}

/// A lease chunk is this share of the reservation, split between the replicas...
pub(super) const LEASE_SHARE: f64 = 0.02;

/// ...or two calls' worth where that is more, up to this share: what a replica may hold unused
/// when the window closes, so the fleet's under-admission stays small.
pub(super) const LEASE_MAX_SHARE: f64 = 0.05;

impl Shared {
    /// Takes `input`/`output` tokens from the fleet's reservation of `model` (one Lua script):
    /// `Some(true)` taken, `Some(false)` full, `None` Redis did not answer.
    pub(super) async fn take_from_fleet(
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

    pub(super) fn chunk(&self, capacity: (u64, u64), call: (u64, u64)) -> (u64, u64) {
        let replicas = f64::from(self.replicas.max(1));
        let size = |cap: u64, want: u64| {
            let base = (cap as f64 * LEASE_SHARE / replicas) as u64;
            let most = (cap as f64 * LEASE_MAX_SHARE / replicas) as u64;
            base.max((2 * want).min(most)).max(1)
        };
        (size(capacity.0, call.0), size(capacity.1, call.1))
    }

    /// Admits a call from this replica's lease if it holds enough.
    pub(super) fn take_from_lease(
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
    pub(super) fn add_to_lease(
        &self,
        model: &str,
        now: Instant,
        window: Duration,
        input: u64,
        output: u64,
    ) {
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
    pub(super) fn refill_if_low(
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
        if let Some(l) = leases.get_mut(model)
            && l.until == t.lease_until
            && l.until > crate::time::now()
        {
            l.input += t.input as i64 - input as i64;
            l.output += t.output as i64 - output as i64;
        }
    }
}
