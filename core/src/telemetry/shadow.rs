//! Shadow evaluation of a family's variant router (`router = { shadow = true }`): the family
//! serves its default variant, and for every answered call the router records, in the
//! prompt's cell (task kind and difficulty band), which variant routing would have chosen,
//! what the call cost and what it would have cost on that variant, and the feedback that
//! arrives for it. [`ShadowReport`] is what `laneway router report` prints.
//!
//! The would-be cost prices the served call's own tokens at the would-be variant's prices: a
//! cheaper model may answer at another length, so it is an estimate.
//!
//! ```
//! use laneway::telemetry::shadow::{ShadowCall, ShadowLedger};
//! let ledger = ShadowLedger::default();
//! let call = ShadowCall {
//!     family: "claude",
//!     kind: "general",
//!     band: 1,
//!     served: "anthropic.claude-sonnet-4-5-20250929-v1:0",
//!     would_choose: "anthropic.claude-haiku-4-5-20251001-v1:0",
//!     served_usd: 0.003,
//!     would_usd: 0.001,
//! };
//! ledger.answered(&call);
//! ledger.feedback("claude", ("general", 1), true);
//! let report = ledger.report();
//! let claude = &report.families["claude"];
//! assert_eq!(claude.calls, 1);
//! assert!((claude.saving() - 2.0 / 3.0).abs() < 1e-9);
//! ```

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// One answered call of a family in shadow mode.
#[derive(Debug, Clone, Copy)]
pub struct ShadowCall<'a> {
    /// The family in shadow mode.
    pub family: &'a str,
    /// The kind of work the prompt asks for (`general`, `code`, ...): its cell's kind.
    pub kind: &'a str,
    /// The prompt's difficulty band (0 easiest): its cell's band.
    pub band: u8,
    /// The variant that served (the family's default, or a request's minimum).
    pub served: &'a str,
    /// The variant routing would have chosen.
    pub would_choose: &'a str,
    /// What the call cost, in USD.
    pub served_usd: f64,
    /// The served call's tokens at the would-be variant's prices.
    pub would_usd: f64,
}

/// The shadow figures of every family in shadow mode, shared by a router's clones.
#[derive(Debug, Default)]
pub struct ShadowLedger {
    families: Mutex<BTreeMap<String, ShadowFamily>>,
}

/// What shadow evaluation recorded for one family.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ShadowFamily {
    /// Answered calls.
    pub calls: u64,
    /// What they cost, in USD.
    pub served_usd: f64,
    /// Their tokens at the would-be variants' prices, in USD (an estimate).
    pub would_usd: f64,
    /// Calls per variant served.
    pub served: BTreeMap<String, u64>,
    /// Calls per variant routing would have chosen.
    pub would_choose: BTreeMap<String, u64>,
    /// Per cell, `kind.band` (e.g. `code.3`).
    pub cells: BTreeMap<String, ShadowCell>,
}

/// One cell's shadow figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ShadowCell {
    /// Answered calls in the cell.
    pub calls: u64,
    /// What they cost, in USD.
    pub served_usd: f64,
    /// Their tokens at the would-be variants' prices, in USD (an estimate).
    pub would_usd: f64,
    /// Calls per variant routing would have chosen.
    pub would_choose: BTreeMap<String, u64>,
    /// Feedback on the served calls of the cell: good and bad answers.
    pub good: u64,
    /// Feedback on the served calls of the cell: bad answers.
    pub bad: u64,
}

/// Every family in shadow mode.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ShadowReport {
    /// Each family's figures, by family name.
    pub families: BTreeMap<String, ShadowFamily>,
}

impl ShadowReport {
    /// No family is in shadow mode, or none has answered.
    pub fn is_empty(&self) -> bool {
        self.families.is_empty()
    }
}

impl ShadowFamily {
    /// The share of the served cost routing would have saved (negative: it would have cost
    /// more).
    pub fn saving(&self) -> f64 {
        if self.served_usd > 0.0 {
            1.0 - self.would_usd / self.served_usd
        } else {
            0.0
        }
    }

    /// Calls of the cells where routing would have chosen a variant other than the one
    /// served, and feedback on them: (calls, good, bad). Their served success rate is the
    /// quality at stake: a cell the served variant often fails is not one to send lower.
    pub fn moved(&self, served: &str) -> (u64, u64, u64) {
        self.cells.values().fold((0, 0, 0), |(c, g, b), cell| {
            let moved: u64 = cell
                .would_choose
                .iter()
                .filter(|(v, _)| v.as_str() != served)
                .map(|(_, n)| n)
                .sum();
            if moved == 0 {
                (c, g, b)
            } else {
                (c + moved, g + cell.good, b + cell.bad)
            }
        })
    }
}

impl ShadowLedger {
    /// Records an answered call.
    pub fn answered(&self, call: &ShadowCall<'_>) {
        let mut families = self.families.lock().unwrap_or_else(|p| p.into_inner());
        let family = families.entry(call.family.to_string()).or_default();
        family.calls += 1;
        family.served_usd += call.served_usd;
        family.would_usd += call.would_usd;
        *family.served.entry(call.served.to_string()).or_default() += 1;
        *family
            .would_choose
            .entry(call.would_choose.to_string())
            .or_default() += 1;
        let cell = family
            .cells
            .entry(format!("{}.{}", call.kind, call.band))
            .or_default();
        cell.calls += 1;
        cell.served_usd += call.served_usd;
        cell.would_usd += call.would_usd;
        *cell
            .would_choose
            .entry(call.would_choose.to_string())
            .or_default() += 1;
    }

    /// Records feedback on a served call of a family in shadow mode, in its cell; false when
    /// the family or cell has no shadowed call.
    pub fn feedback(&self, family: &str, (kind, band): (&str, u8), good: bool) -> bool {
        let mut families = self.families.lock().unwrap_or_else(|p| p.into_inner());
        let Some(cell) = families
            .get_mut(family)
            .and_then(|f| f.cells.get_mut(&format!("{kind}.{band}")))
        else {
            return false;
        };
        if good {
            cell.good += 1;
        } else {
            cell.bad += 1;
        }
        true
    }

    /// Everything recorded so far.
    pub fn report(&self) -> ShadowReport {
        ShadowReport {
            families: self
                .families
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        }
    }
}
