//! What a process keeps between runs without Redis (`[local_state]`): its targets' latency in
//! brief and its ejected regions, in one small JSON file, written whole to a temporary file and
//! renamed over the old one so that a reader never sees half of it.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::known::{LatencySummary, MAX_SUMMARIES};

/// The file's format version: a file of another version is ignored.
const VERSION: u32 = 1;

/// What the file holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Saved {
    /// The format's version (1): a file of another is ignored.
    pub version: u32,
    /// When it was written (unix milliseconds).
    pub written_ms: u64,
    /// Targets' latency by target key (`region|id|tier`).
    pub targets: BTreeMap<String, LatencySummary>,
    /// Ejected regions, each until when (unix milliseconds).
    pub ejected: BTreeMap<String, u64>,
}

impl Saved {
    /// What to write at `now_ms`.
    pub fn new(
        now_ms: u64,
        targets: Vec<(String, LatencySummary)>,
        ejected: Vec<(String, u64)>,
    ) -> Self {
        Self {
            version: VERSION,
            written_ms: now_ms,
            targets: targets.into_iter().take(MAX_SUMMARIES).collect(),
            ejected: ejected.into_iter().collect(),
        }
    }

    /// Reads `path`, keeping what is younger than `max_age` at `now_ms`. A missing file is
    /// `None`; an unreadable one, another version's or one wholly stale is `None` too, with a
    /// warning: what was learnt before is a head start, never a reason to fail.
    pub fn load(path: &Path, now_ms: u64, max_age: Duration) -> Option<Self> {
        let text = match std::fs::read(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "laneway: cannot read the local state file; starting without it");
                return None;
            }
        };
        let mut saved: Saved = match serde_json::from_slice(&text) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "laneway: the local state file is not valid; starting without it");
                return None;
            }
        };
        if saved.version != VERSION {
            tracing::warn!(path = %path.display(), version = saved.version, "laneway: the local state file is of another version; starting without it");
            return None;
        }
        saved.targets.retain(|_, s| s.is_fresh(now_ms, max_age));
        saved.targets = std::mem::take(&mut saved.targets)
            .into_iter()
            .take(MAX_SUMMARIES)
            .collect();
        saved.ejected.retain(|_, until| *until > now_ms);
        Some(saved)
    }

    /// Writes it to `path` (its directory made if missing), through a temporary file beside
    /// it renamed over the old one.
    pub fn store(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let mut tmp = path.as_os_str().to_owned();
        // Two routers of one process may share the file: each writes a temporary of its own.
        tmp.push(format!(
            ".{}.{:x}.tmp",
            std::process::id(),
            rand::random::<u64>()
        ));
        let tmp = std::path::PathBuf::from(tmp);
        std::fs::write(
            &tmp,
            serde_json::to_vec(self).map_err(std::io::Error::other)?,
        )?;
        std::fs::rename(&tmp, path).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(at_ms: u64) -> LatencySummary {
        LatencySummary {
            first_token_ms: 120,
            hedge_ms: Some(100),
            gap_ms: None,
            samples: 12,
            at_ms,
        }
    }

    #[test]
    fn a_saved_file_reads_back_without_what_went_stale() {
        let dir = std::env::temp_dir().join(format!("laneway-saved-{:x}", rand::random::<u64>()));
        let path = dir.join("nested/state.json");
        let hour = Duration::from_secs(3600);
        let now = 10_000_000;
        let saved = Saved::new(
            now,
            vec![
                ("us-east-1|m|".into(), summary(now)),
                ("us-west-2|m|".into(), summary(now - 2 * 3_600_000)),
            ],
            vec![
                ("us-east-1".into(), now + 5_000),
                ("eu-west-1".into(), now - 1),
            ],
        );
        saved.store(&path).unwrap();
        let back = Saved::load(&path, now + 1_000, hour).unwrap();
        assert_eq!(back.targets.keys().collect::<Vec<_>>(), ["us-east-1|m|"]);
        assert_eq!(back.ejected.keys().collect::<Vec<_>>(), ["us-east-1"]);
        // Missing, corrupt, or of another version: nothing, never an error.
        assert_eq!(Saved::load(&dir.join("none.json"), now, hour), None);
        std::fs::write(&path, b"{ not json").unwrap();
        assert_eq!(Saved::load(&path, now, hour), None);
        std::fs::write(
            &path,
            br#"{"version":99,"written_ms":0,"targets":{},"ejected":{}}"#,
        )
        .unwrap();
        assert_eq!(Saved::load(&path, now, hour), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
