//! The fleet's prefix index: where each prompt prefix is cached, published and looked up.

use super::{CachedAt, Ordering, Shared, unix_ms};

pub(super) fn hex(digest: &[u8; 32]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(64);
    for b in digest {
        let _ = write!(s, "{b:02x}");
    }
    s
}

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
