//! One tokio runtime per process. A forked child gets a new one: the parent's worker threads
//! do not exist there.

use std::sync::Mutex;

use tokio::runtime::Runtime;

static RUNTIME: Mutex<Option<(u32, &'static Runtime)>> = Mutex::new(None);

/// The runtime of this process, started on first use.
pub(crate) fn get() -> std::io::Result<&'static Runtime> {
    let pid = std::process::id();
    let mut slot = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((owner, rt)) = *slot
        && owner == pid
    {
        return Ok(rt);
    }
    // The old runtime (a parent's, after fork) is leaked: dropping it would wait on threads
    // that only exist in the parent.
    let rt: &'static Runtime = Box::leak(Box::new(
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("laneway")
            .build()?,
    ));
    *slot = Some((pid, rt));
    Ok(rt)
}
