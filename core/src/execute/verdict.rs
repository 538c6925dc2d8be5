//! What a failure means: one table from the kinds and facts that backends find in their
//! services' answers ([`ErrorKind`], [`FailureFact`]) to what the execution does next.

use crate::state::State;
use crate::types::{Attempt, Error, ErrorKind, FailureFact, TimeLimit};

/// What one failed attempt tells the call, its target and its region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Verdict {
    /// The call moves on to another target (or another round).
    pub(super) fails_over: bool,
    /// What the failure says of the attempt's region.
    pub(super) region: RegionSign,
    /// The target refused access: its model's other targets in the region are refused too.
    pub(super) access_refused: bool,
    /// The target does not stream: it is sent whole from now on.
    pub(super) streaming_refused: bool,
    /// The call's time limit that ended the attempt, if one did.
    pub(super) time_limit: Option<TimeLimit>,
}

/// What a failure says of the attempt's region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RegionSign {
    /// Nothing: a refusal or a bad request is the call's or the target's.
    Healthy,
    /// The region is a worse bet for this call: its quota throttled one target, or it
    /// refused credentials other regions may take. The call's other targets there go last.
    Suspect,
    /// A stall, reset, outage or server error, usually the regional endpoint's: the call's
    /// other targets there go last, and it counts toward ejecting the region
    /// (`routing.outlier`).
    Unhealthy,
}

/// The verdict on `err`, from `attempt`. A refusal of credentials that the provider has taken
/// from this router before (`state`) fails over: a region not enabled for the account refuses
/// what every other region takes.
pub(super) fn judge(state: &State, attempt: &Attempt, err: &Error) -> Verdict {
    let kind = err.kind();
    let fact = err.fact();
    let region_refused = fact == Some(FailureFact::RegionRefusedCredentials);
    let fails_over =
        kind.fails_over() || region_refused && state.health().answered(&attempt.target);
    let region = match kind {
        ErrorKind::Timeout
        | ErrorKind::Transport
        | ErrorKind::Unavailable
        | ErrorKind::Internal => RegionSign::Unhealthy,
        ErrorKind::Throttled => RegionSign::Suspect,
        _ if fails_over && region_refused => RegionSign::Suspect,
        _ => RegionSign::Healthy,
    };
    Verdict {
        fails_over,
        region,
        access_refused: kind == ErrorKind::AccessDenied,
        streaming_refused: fact == Some(FailureFact::StreamingRefused),
        time_limit: match fact {
            Some(FailureFact::TimeLimitHit(limit)) => Some(limit),
            _ => None,
        },
    }
}

/// Whether `err` says the call's credentials or access were refused (by one target or its
/// region): another round over the same targets would be refused the same.
pub(super) fn refused(err: &Error) -> bool {
    err.kind() == ErrorKind::AccessDenied || err.may_be_the_targets_refusal()
}
