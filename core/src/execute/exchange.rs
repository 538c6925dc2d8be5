//! Passing on what this router learnt of its targets, and taking in what other processes
//! learnt: with `[shared]`, the fleet's targets' latency and ejected regions through Redis;
//! with `[local_state]`, this process's previous run's through a file. A new replica or a
//! fresh process then starts from what is known, and its first calls are bounded by it.

use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::Executor;
use crate::state::shared::unix_ms;
use crate::state::{LatencySummary, saved::Saved};

/// How often the fleet's figures are read.
const READ_EVERY: Duration = Duration::from_secs(1);
/// The longest a new replica's first read of the fleet's figures may take.
const FIRST_READ_WITHIN: Duration = Duration::from_millis(500);
/// How often this replica's figures are published, when they changed.
const PUBLISH_EVERY: Duration = Duration::from_secs(1);
/// How often they are published unchanged: well within the age at which readers ignore them.
const REPUBLISH_EVERY: Duration =
    Duration::from_secs(crate::state::shared::SUMMARY_MAX_AGE.as_secs() / 2);

impl Executor {
    /// This router's targets in brief, now.
    fn summaries(&self) -> Vec<(String, LatencySummary)> {
        let routing = &self.config.routing;
        self.state.health().latency_summaries(
            &routing.timeouts.learned,
            routing.hedge.standard_quantile,
            unix_ms(),
        )
    }

    /// Takes in what another process knew: its targets' latency (current for `max_age`) and
    /// its ejections.
    fn adopt(
        &self,
        latency: Vec<(String, LatencySummary)>,
        max_age: Duration,
        ejected: Vec<(String, u64)>,
    ) {
        self.state.health().adopt_summaries(latency, max_age);
        let (now, now_ms) = (crate::time::now(), unix_ms());
        for (region, until) in ejected {
            if self
                .state
                .health()
                .adopt_ejection(now, now_ms, &region, until)
            {
                tracing::debug!(region = %region, "laneway: region ejected elsewhere; ejected here too");
            }
        }
    }

    /// The local state file, relative to the configuration's directory, if configured.
    fn local_state_path(&self) -> Option<PathBuf> {
        let local = self.config.local_state.as_ref()?;
        Some(match &self.config.base_dir {
            Some(dir) if local.path.is_relative() => dir.join(&local.path),
            _ => local.path.clone(),
        })
    }

    /// Reads the local state file (`[local_state]`), if there is one younger than its
    /// `max_age`.
    pub fn restore_local_state(&self) {
        let (Some(path), Some(local)) = (self.local_state_path(), &self.config.local_state) else {
            return;
        };
        self.local_state_read
            .store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(saved) = Saved::load(&path, unix_ms(), local.max_age) {
            tracing::debug!(path = %path.display(), targets = saved.targets.len(), "laneway: local state restored");
            self.adopt(
                saved.targets.into_iter().collect(),
                local.max_age,
                saved.ejected.into_iter().collect(),
            );
        }
    }

    /// Writes the local state file (`[local_state]`) now; a failure is logged, never raised.
    pub fn save_local_state(&self) {
        let Some(path) = self.local_state_path() else {
            return;
        };
        let saved = self.snapshot();
        if let Err(e) = saved.store(&path) {
            tracing::warn!(path = %path.display(), error = %e, "laneway: cannot write the local state file");
        }
    }

    fn snapshot(&self) -> Saved {
        let now_ms = unix_ms();
        let mut targets = self.summaries();
        // What an earlier run knew of targets this one has not called stays known.
        for (key, s) in self.state.health().known_summaries() {
            if !targets.iter().any(|(k, _)| *k == key) {
                targets.push((key, s));
            }
        }
        Saved::new(
            now_ms,
            targets,
            self.state
                .health()
                .ejections_unix(crate::time::now(), now_ms),
        )
    }

    /// Reads the fleet's figures once, within `within`.
    async fn read_fleet_within(&self, within: Duration) {
        let Some(shared) = self.state.shared() else {
            return;
        };
        if let Some(known) = shared.read_fleet(within).await {
            self.adopt(
                known.latency,
                crate::state::shared::SUMMARY_MAX_AGE,
                known.ejected,
            );
        }
    }

    /// Reads the fleet's figures as a new replica does before its first call: once, more
    /// patiently than a call's other waits for Redis (`[shared].timeout`, at least 500 ms),
    /// since every call until the next read would start from the models' priors instead.
    pub async fn read_fleet(&self) {
        let within = self
            .config
            .shared
            .as_ref()
            .map_or(FIRST_READ_WITHIN, |s| s.timeout.max(FIRST_READ_WITHIN));
        self.read_fleet_within(within).await;
    }

    /// Keeps exchanging while the router lives: the fleet's figures read every second and this
    /// replica's published every second when they changed (`[shared]`), the local state file written every
    /// `save_every` when it changed (`[local_state]`).
    pub fn spawn_exchange(self: &Arc<Self>) {
        let shared = self.state.shared().is_some();
        let save_every = self.config.local_state.as_ref().map(|l| l.save_every);
        if !shared && save_every.is_none() {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let weak: Weak<Self> = Arc::downgrade(self);
        let every = if shared {
            READ_EVERY
        } else {
            save_every.unwrap_or(READ_EVERY)
        };
        handle.spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let started = tokio::time::Instant::now();
            let (mut published, mut republished, mut saved) = (started, started, started);
            let (mut last_published, mut last_saved): (Option<Saved>, Option<Saved>) = (None, None);
            loop {
                tick.tick().await;
                let Some(exec) = weak.upgrade() else { return };
                let now = tokio::time::Instant::now();
                if let Some(sh) = exec.state.shared() {
                    if now.duration_since(published) >= PUBLISH_EVERY {
                        published = now;
                        let mine = Saved::new(unix_ms(), exec.summaries(), Vec::new());
                        // Unchanged figures go again well before readers take them for stale.
                        let due = now.duration_since(republished) >= REPUBLISH_EVERY;
                        let changed = last_published
                            .as_ref()
                            .is_none_or(|last| !same_knowledge(last, &mine));
                        if due || changed {
                            republished = now;
                            let summaries: Vec<_> = mine.targets.clone().into_iter().collect();
                            sh.publish_latency(&summaries);
                            last_published = Some(mine);
                        }
                    }
                    exec.read_fleet_within(sh.timeout()).await;
                }
                if let Some(save_every) = save_every
                    && now.duration_since(saved) >= save_every
                    && let Some(path) = exec.local_state_path()
                {
                    saved = now;
                    let snapshot = exec.snapshot();
                    if last_saved
                        .as_ref()
                        .is_none_or(|last| !same_knowledge(last, &snapshot))
                    {
                        let written = snapshot.clone();
                        // A file write: off the runtime's worker threads.
                        let stored = tokio::task::spawn_blocking(move || written.store(&path));
                        if let Ok(Err(e)) = stored.await {
                            tracing::warn!(error = %e, "laneway: cannot write the local state file");
                        }
                        last_saved = Some(snapshot);
                    }
                }
            }
        });
    }
}

/// Whether two snapshots say the same, whenever they were taken.
fn same_knowledge(a: &Saved, b: &Saved) -> bool {
    let untimed = |s: &LatencySummary| LatencySummary { at_ms: 0, ..*s };
    a.ejected == b.ejected
        && a.targets.len() == b.targets.len()
        && a.targets
            .iter()
            .zip(&b.targets)
            .all(|((ka, sa), (kb, sb))| ka == kb && untimed(sa) == untimed(sb))
}

impl Drop for Executor {
    /// A process ending (a worker's run, a serverless function's container) keeps what it
    /// learnt for the next.
    fn drop(&mut self) {
        if self
            .local_state_read
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            self.save_local_state();
        }
    }
}
