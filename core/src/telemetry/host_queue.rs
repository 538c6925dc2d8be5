//! A bounded queue from the core's threads to a host's own (Python, Node): pushing never
//! waits (a full queue drops the item and counts it), and the host drains it in batches on a
//! thread of its own, waiting on a condition variable without holding its runtime's lock.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// A bounded queue for a host to drain.
#[derive(Debug)]
pub(super) struct HostQueue<T> {
    items: Mutex<VecDeque<T>>,
    ready: Condvar,
    capacity: usize,
    dropped: AtomicU64,
    /// Set when the producer is gone: a waiting drain returns at once.
    closed: std::sync::atomic::AtomicBool,
    /// Set to end a [`linger`](Self::linger) now (a flush is waiting).
    hurry: std::sync::atomic::AtomicBool,
}

impl<T> HostQueue<T> {
    /// An empty queue holding at most `capacity` items.
    pub(super) fn new(capacity: usize) -> Self {
        HostQueue {
            items: Mutex::new(VecDeque::new()),
            ready: Condvar::new(),
            capacity,
            dropped: AtomicU64::new(0),
            closed: std::sync::atomic::AtomicBool::new(false),
            hurry: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Adds `item`, or drops and counts it when the queue is full; never waits on the host.
    pub(super) fn push(&self, item: T) {
        let mut items = self.items.lock().unwrap_or_else(|e| e.into_inner());
        if items.len() >= self.capacity {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let was_empty = items.is_empty();
        items.push_back(item);
        drop(items);
        // The host waits only on an empty queue: waking it once per batch is enough.
        if was_empty {
            self.ready.notify_one();
        }
    }

    /// Adds every item of `batch` there is room for (one lock, one wake-up), dropping and
    /// counting the rest.
    pub(super) fn push_all(&self, batch: impl IntoIterator<Item = T>) {
        let mut items = self.items.lock().unwrap_or_else(|e| e.into_inner());
        let was_empty = items.is_empty();
        let mut dropped = 0;
        for item in batch {
            if items.len() >= self.capacity {
                dropped += 1;
            } else {
                items.push_back(item);
            }
        }
        let woke = was_empty && !items.is_empty();
        drop(items);
        if dropped > 0 {
            self.dropped.fetch_add(dropped, Ordering::Relaxed);
        }
        if woke {
            self.ready.notify_one();
        }
    }

    /// Says the producer is gone: a drain waiting now, or later, returns without waiting.
    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
        let _guard = self.items.lock().unwrap_or_else(|e| e.into_inner());
        self.ready.notify_all();
    }

    /// Whether [`close`](Self::close) was called.
    pub(super) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// Items dropped because the host did not drain them in time.
    pub(super) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Waits at most `wait` for an item, taking none; whether one is there.
    pub(super) fn wait(&self, wait: Duration) -> bool {
        let items = self.items.lock().unwrap_or_else(|e| e.into_inner());
        let (items, _) = self
            .ready
            .wait_timeout_while(items, wait, |r| r.is_empty())
            .unwrap_or_else(|e| e.into_inner());
        !items.is_empty()
    }

    /// Waits `wait`, or until [`close`](Self::close), whatever is pushed meanwhile: a consumer
    /// that takes items in batches lets them gather without a wake-up for each.
    pub(super) fn linger(&self, wait: Duration) {
        let items = self.items.lock().unwrap_or_else(|e| e.into_inner());
        let _ = self
            .ready
            .wait_timeout_while(items, wait, |_| {
                !self.is_closed() && !self.hurry.swap(false, Ordering::Relaxed)
            })
            .unwrap_or_else(|e| e.into_inner());
    }

    /// Ends the consumer's [`linger`](Self::linger) now, or its next one at once.
    pub(super) fn hurry(&self) {
        self.hurry.store(true, Ordering::Relaxed);
        let _guard = self.items.lock().unwrap_or_else(|e| e.into_inner());
        self.ready.notify_all();
    }

    /// Up to `max` items, oldest first, waiting at most `wait` for the first.
    pub(super) fn drain(&self, max: usize, wait: Duration) -> Vec<T> {
        let items = self.items.lock().unwrap_or_else(|e| e.into_inner());
        let (mut items, _) = self
            .ready
            .wait_timeout_while(items, wait, |r| r.is_empty() && !self.is_closed())
            .unwrap_or_else(|e| e.into_inner());
        let n = items.len().min(max);
        items.drain(..n).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_queue_drops_and_counts_and_drains_oldest_first() {
        let q = HostQueue::new(3);
        q.push(1);
        q.push_all([2, 3, 4, 5]);
        assert_eq!(q.dropped(), 2);
        assert!(q.wait(Duration::ZERO));
        assert_eq!(q.drain(2, Duration::ZERO), [1, 2]);
        assert_eq!(q.drain(10, Duration::ZERO), [3]);
        assert!(!q.wait(Duration::ZERO));
        assert!(q.drain(10, Duration::ZERO).is_empty());
    }
}
