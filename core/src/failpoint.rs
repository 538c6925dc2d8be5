//! Failpoints: a forced panic at a named place, so that tests (the bindings' above all) can
//! show that a panic anywhere becomes a typed error rather than an abort. Off unless armed; a
//! check is one relaxed atomic load.
//!
//! Names: `plan` ([`Router::plan`](crate::Router::plan)), `generate` (inside
//! [`Router::generate`](crate::Router::generate)), `stream_event` (each
//! [`LazyStream::next`](crate::LazyStream::next)).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

static ARMED: AtomicBool = AtomicBool::new(false);
static NAME: Mutex<String> = Mutex::new(String::new());

/// Arms the failpoint `name` for the whole process (`None` disarms). For tests only.
#[doc(hidden)]
pub fn arm(name: Option<&str>) {
    let mut armed = NAME.lock().unwrap_or_else(|p| p.into_inner());
    *armed = name.unwrap_or_default().to_string();
    ARMED.store(name.is_some(), Ordering::Release);
}

/// Panics if the failpoint `name` is armed.
pub(crate) fn check(name: &str) {
    if ARMED.load(Ordering::Relaxed) {
        let armed = NAME.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if armed == name {
            panic!("failpoint {name} (forced by a test)");
        }
    }
}
