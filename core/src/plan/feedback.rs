//! Learning from production: per cell of a routed family (the prompt's task kind and
//! difficulty band), each variant's recent success rate from callers' feedback, and how it
//! moves the classifier's choice within a quality-loss budget.
//!
//! A prompt's kind is what its cue words ask for ([`TASK_KINDS`]: code, mathematics, writing,
//! explanation, extraction, or general); its band is where the classifier's expected loss for
//! the family's cheapest variant falls among the model's training prompts ([`BANDS`] bands of
//! equal share). Kinds matter because a variant tends to fail at a kind of work (a model update
//! that breaks JSON extraction), not at a level of difficulty. In each cell, every variant
//! keeps a success count and a call count, both decayed so that an outcome
//! `feedback_half_life` outcomes of its cell old weighs half. A cheaper variant whose success
//! trails the strongest's by more than the budget (by two standard errors, so that noise does
//! not move traffic) loses the cell; one that stays within it (by two) takes the cell even
//! above its threshold; otherwise the classifier's thresholds decide. Once feedback has
//! arrived, one call in `1 / explore_share` of a cell tries a neighbouring variant, alternately
//! the strongest (the baseline) and the one below the pick (so that a recovered variant wins
//! its cell back): a bandit's exploration, counted out rather than drawn, so runs repeat.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, Ordering};

use serde::Serialize;

use crate::classifier::TASK_KINDS;
use crate::config::VariantRouterConfig;
use crate::types::VariantAdaptation;

/// Each routed family's feedback, cell by cell (those with outcomes).
pub type FeedbackReport = std::collections::BTreeMap<String, Vec<CellSnapshot>>;

/// Difficulty bands per task kind.
pub const BANDS: usize = 8;
/// Cells per family: a band of each kind.
const CELLS: usize = BANDS * TASK_KINDS.len();

/// One family's feedback, shared by the router's clones.
///
/// ```
/// use laneway::plan::feedback::FamilyFeedback;
/// let config = laneway::config::VariantRouterConfig {
///     max_strong_share: Some(0.3),
///     ..Default::default()
/// };
/// let nova = FamilyFeedback::new(&config, 3, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]);
/// let cell = FamilyFeedback::cell(5, nova.band_of(0.05)).unwrap(); // extraction, easiest band
/// for _ in 0..30 {
///     nova.record(cell, 2, true); // the strongest answers well...
///     nova.record(cell, 0, false); // ...the cheapest does not
/// }
/// let (variant, why) = nova.adjust(cell, 0, 0); // the classifier picked the cheapest
/// assert_eq!(variant, 1);
/// assert!(why.is_some());
/// ```
#[derive(Debug)]
pub struct FamilyFeedback {
    /// The upper loss of each band but the last, ascending.
    edges: [f32; BANDS - 1],
    budget: f64,
    explore_every: Option<u32>,
    /// What an outcome's weight is multiplied by at each later outcome of its cell.
    decay: f64,
    /// Per cell, made at its first outcome (a router that hears nothing allocates nothing
    /// per cell).
    counts: Mutex<Vec<Option<Counts>>>,
    /// Each cell's verdict on each cheaper variant (`variants - 1` a cell), set as outcomes
    /// arrive and read without a lock while planning.
    verdicts: Vec<AtomicU8>,
    variants: usize,
    /// Calls sent per cell (counts exploration turns).
    sent: Vec<AtomicU32>,
    heard: AtomicBool,
}

/// A cell's decayed counts per variant, cheapest first.
#[derive(Debug, Clone)]
struct Counts {
    good: Vec<f64>,
    total: Vec<f64>,
}

impl Counts {
    fn new(variants: usize) -> Self {
        Self {
            good: vec![0.0; variants],
            total: vec![0.0; variants],
        }
    }
}

/// A cell's decayed outcomes per variant, cheapest first, and its verdicts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Outcomes {
    /// Decayed good outcomes per variant.
    pub good: Vec<f64>,
    /// Decayed outcomes per variant.
    pub total: Vec<f64>,
    /// Each cheaper variant's verdict against the strongest, as of the cell's last outcome.
    pub verdicts: Vec<Verdict>,
}

/// What a cell's evidence says of a cheaper variant against the strongest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum Verdict {
    /// Too little evidence either way: the classifier's threshold decides.
    Unknown = 0,
    /// Its success trails the strongest's by more than the budget.
    OverBudget = 1,
    /// It stays within the budget.
    WithinBudget = 2,
}

impl Verdict {
    fn from_u8(v: u8) -> Self {
        match v {
            1 => Self::OverBudget,
            2 => Self::WithinBudget,
            _ => Self::Unknown,
        }
    }
}

impl FamilyFeedback {
    /// A family of `variants` variants, its bands cut at `edges` (ascending expected losses).
    pub fn new(config: &VariantRouterConfig, variants: usize, edges: [f32; BANDS - 1]) -> Self {
        let share = f64::from(config.explore_share);
        Self {
            edges,
            budget: f64::from(config.quality_loss_budget),
            explore_every: (share > 0.0).then(|| (1.0 / share).round().max(2.0) as u32),
            decay: 0.5f64.powf(1.0 / f64::from(config.feedback_half_life.max(1))),
            counts: Mutex::new(vec![None; CELLS]),
            verdicts: (0..CELLS * variants.saturating_sub(1))
                .map(|_| AtomicU8::new(Verdict::Unknown as u8))
                .collect(),
            variants,
            sent: (0..CELLS).map(|_| AtomicU32::new(0)).collect(),
            heard: AtomicBool::new(false),
        }
    }

    /// The band of a prompt whose cheapest variant's expected loss is `loss`.
    pub fn band_of(&self, loss: f32) -> u8 {
        self.edges.iter().filter(|e| loss > **e).count() as u8
    }

    /// The cell of a prompt of kind `kind` (an index into [`TASK_KINDS`]) in `band`, if both
    /// are in range.
    pub fn cell(kind: usize, band: u8) -> Option<usize> {
        (kind < TASK_KINDS.len() && usize::from(band) < BANDS)
            .then(|| kind * BANDS + usize::from(band))
    }

    /// The variant to send: `chosen` (the classifier's pick, at or above `min`) as the cell's
    /// feedback adjusts it, and why it moved.
    pub fn adjust(&self, cell: usize, chosen: usize, min: usize) -> (usize, Option<AdaptedFrom>) {
        let strongest = self.variants - 1;
        let verdict = |v: usize| self.verdict(cell, v);
        let mut at = chosen;
        while at < strongest && verdict(at) == Verdict::OverBudget {
            at += 1;
        }
        if let Some(cheaper) = (min..at).find(|&v| verdict(v) == Verdict::WithinBudget) {
            at = cheaper;
        }
        let mut adapted = match at.cmp(&chosen) {
            std::cmp::Ordering::Greater => Some(AdaptedFrom::OverBudget(chosen)),
            std::cmp::Ordering::Less => Some(AdaptedFrom::WithinBudget(chosen)),
            std::cmp::Ordering::Equal => None,
        };
        if let Some(other) = self.exploration(cell, at, min, strongest) {
            adapted = Some(AdaptedFrom::Explored(at));
            at = other;
        }
        (at, adapted)
    }

    /// The verdict on cheaper variant `v` in `cell`; `Unknown` out of range.
    fn verdict(&self, cell: usize, v: usize) -> Verdict {
        let cheaper = self.variants - 1;
        if v >= cheaper {
            return Verdict::Unknown;
        }
        self.verdicts
            .get(cell * cheaper + v)
            .map_or(Verdict::Unknown, |a| {
                Verdict::from_u8(a.load(Ordering::Relaxed))
            })
    }

    /// The variant this call explores instead of `at`, on its cell's exploration turn.
    fn exploration(&self, cell: usize, at: usize, min: usize, strongest: usize) -> Option<usize> {
        let every = self.explore_every?;
        if !self.heard.load(Ordering::Relaxed) {
            return None;
        }
        let turn = self.sent.get(cell)?.load(Ordering::Relaxed) + 1;
        if turn % every != 0 {
            return None;
        }
        let below = (at > min).then(|| at - 1);
        let above = (at < strongest).then_some(strongest);
        if (turn / every) % 2 == 1 {
            above.or(below)
        } else {
            below.or(above)
        }
    }

    /// Counts a call sent in `cell` (for its exploration turns).
    pub fn committed(&self, cell: usize) {
        if let Some(sent) = self.sent.get(cell) {
            sent.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records an outcome of `variant` in `cell`; false if either is out of range.
    pub fn record(&self, cell: usize, variant: usize, good: bool) -> bool {
        if cell >= CELLS || variant >= self.variants {
            return false;
        }
        let mut all = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let counts = all[cell].get_or_insert_with(|| Counts::new(self.variants));
        for (g, t) in counts.good.iter_mut().zip(&mut counts.total) {
            *g *= self.decay;
            *t *= self.decay;
        }
        counts.good[variant] += f64::from(u8::from(good));
        counts.total[variant] += 1.0;
        let family = pooled(&all, self.variants);
        let counts = all[cell].as_ref().expect("made above");
        // Written under the lock, so that verdicts change one outcome at a time.
        for v in 0..self.variants - 1 {
            let now = verdict(counts, &family, v, self.verdict(cell, v), self.budget);
            self.verdicts[cell * (self.variants - 1) + v].store(now as u8, Ordering::Relaxed);
        }
        self.heard.store(true, Ordering::Relaxed);
        true
    }

    /// The outcomes and verdicts of every cell that has outcomes, by kind, then easiest band
    /// first.
    pub fn snapshot(&self) -> Vec<CellSnapshot> {
        let all = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        all.iter()
            .enumerate()
            .filter_map(|(cell, c)| Some((cell, c.as_ref()?)))
            .map(|(cell, counts)| {
                let band = (cell % BANDS) as u8;
                CellSnapshot {
                    kind: TASK_KINDS[cell / BANDS],
                    band,
                    up_to_loss: self.edges.get(usize::from(band)).copied(),
                    outcomes: Outcomes {
                        good: counts.good.clone(),
                        total: counts.total.clone(),
                        verdicts: (0..self.variants - 1)
                            .map(|v| self.verdict(cell, v))
                            .collect(),
                    },
                }
            })
            .collect()
    }
}

/// Why the variant moved, by the index of the variant it moved from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdaptedFrom {
    /// The classifier's pick trails the strongest variant by more than the quality-loss budget
    /// in this cell: a stronger variant serves.
    OverBudget(usize),
    /// A cheaper variant than the classifier's pick stays within the budget in this cell.
    WithinBudget(usize),
    /// The call explores another variant instead of the one feedback chose (one call in
    /// `explore_share`).
    Explored(usize),
}

impl AdaptedFrom {
    /// The reason's form, naming the variant.
    pub fn named(self, variants: &[String]) -> VariantAdaptation {
        match self {
            Self::OverBudget(v) => VariantAdaptation::OverBudget {
                from: variants[v].clone(),
            },
            Self::WithinBudget(v) => VariantAdaptation::WithinBudget {
                from: variants[v].clone(),
            },
            Self::Explored(v) => VariantAdaptation::Explored {
                from: variants[v].clone(),
            },
        }
    }
}

/// One cell of a family's feedback, as [`crate::Router::feedback_report`] gives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellSnapshot {
    /// The task kind, one of [`TASK_KINDS`].
    pub kind: &'static str,
    /// The difficulty band, 0 the easiest.
    pub band: u8,
    /// The band's upper expected loss (none for the last band).
    pub up_to_loss: Option<f32>,
    /// Its outcomes and verdicts.
    pub outcomes: Outcomes,
}

/// How many standard errors the gap must clear the budget by, either way: verdicts are taken
/// at every call, so one error would let noise move a cell now and then.
const CONFIDENCE: f64 = 2.0;

/// How many outcomes' weight the strongest variant's family-wide success rate has in each
/// cell's baseline.
const POOLED_WEIGHT: f64 = 10.0;

/// Every cell's outcomes summed: each variant's family-wide record.
fn pooled(all: &[Option<Counts>], variants: usize) -> Counts {
    let mut sum = Counts::new(variants);
    for o in all.iter().flatten() {
        for (i, (g, t)) in o.good.iter().zip(&o.total).enumerate() {
            sum.good[i] += g;
            sum.total[i] += t;
        }
    }
    sum
}

/// The verdict on cheaper variant `v` in a cell: the gap between the strongest's and its
/// success rates against the budget, by [`CONFIDENCE`] standard errors. Each rate is the mean of a Beta
/// posterior from Beta(1, 1); the strongest's also from its family-wide rate (worth up to
/// [`POOLED_WEIGHT`] outcomes), so that a cell where the strongest is seen only on exploration
/// turns still has a baseline. A cheaper variant's rate is its own in the cell (borrowing its
/// rate elsewhere would hide the failure of a kind of work); no verdict before it has outcomes
/// in the cell.
///
/// A variant over the budget stays so until the gap itself is back within it (not merely
/// uncertain), so that a variant that lost a cell does not win it back as its failures fade
/// and fail again: only fresh outcomes (its exploration turns) give the cell back.
fn verdict(outcomes: &Counts, family: &Counts, v: usize, was: Verdict, budget: f64) -> Verdict {
    let strongest = outcomes.total.len() - 1;
    if outcomes.total[v] < 1.0 {
        return was;
    }
    let posterior = |i: usize| {
        let prior = if i == strongest {
            family.total[i].min(POOLED_WEIGHT)
        } else {
            0.0
        };
        let prior_good = if family.total[i] > 0.0 {
            prior * family.good[i] / family.total[i]
        } else {
            0.0
        };
        let (good, n) = (
            outcomes.good[i] + prior_good + 1.0,
            outcomes.total[i] + prior + 2.0,
        );
        let mean = good / n;
        (mean, mean * (1.0 - mean) / (n + 1.0))
    };
    let (strong, strong_var) = posterior(strongest);
    let (weak, weak_var) = posterior(v);
    let (gap, error) = (strong - weak, CONFIDENCE * (strong_var + weak_var).sqrt());
    if gap - error > budget || (was == Verdict::OverBudget && gap > budget) {
        Verdict::OverBudget
    } else if gap + error <= budget {
        Verdict::WithinBudget
    } else {
        Verdict::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn family(explore_share: f32) -> FamilyFeedback {
        let config = VariantRouterConfig {
            max_strong_share: Some(0.3),
            explore_share,
            feedback_half_life: 200,
            ..Default::default()
        };
        FamilyFeedback::new(&config, 3, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])
    }

    fn feed(f: &FamilyFeedback, band: usize, variant: usize, good: usize, bad: usize) {
        for _ in 0..good {
            f.record(band, variant, true);
        }
        for _ in 0..bad {
            f.record(band, variant, false);
        }
    }

    #[test]
    fn bands_cut_at_the_edges() {
        let f = family(0.0);
        assert_eq!(f.band_of(-1.0), 0);
        assert_eq!(f.band_of(0.1), 0);
        assert_eq!(f.band_of(0.15), 1);
        assert_eq!(f.band_of(0.9), 7);
        assert_eq!(f.band_of(f32::NAN), 0);
    }

    #[test]
    fn without_evidence_the_classifier_decides() {
        let f = family(0.0);
        assert_eq!(f.adjust(3, 0, 0), (0, None));
        assert_eq!(f.adjust(3, 1, 0), (1, None));
        feed(&f, 3, 0, 3, 2);
        assert_eq!(f.adjust(3, 0, 0), (0, None), "five outcomes prove nothing");
    }

    #[test]
    fn a_failing_variant_loses_its_band_and_only_that_band() {
        let f = family(0.0);
        feed(&f, 2, 2, 28, 2);
        feed(&f, 2, 0, 6, 24);
        assert_eq!(f.adjust(2, 0, 0), (1, Some(AdaptedFrom::OverBudget(0))));
        feed(&f, 2, 1, 4, 26);
        assert_eq!(f.adjust(2, 0, 0), (2, Some(AdaptedFrom::OverBudget(0))));
        assert_eq!(f.adjust(5, 0, 0), (0, None));
    }

    #[test]
    fn a_cheaper_variant_as_good_as_the_strongest_takes_the_band() {
        let f = family(0.0);
        feed(&f, 6, 2, 60, 0);
        assert_eq!(
            f.adjust(6, 2, 0),
            (2, None),
            "no evidence on the cheaper ones"
        );
        for _ in 0..150 {
            f.record(6, 2, true);
            f.record(6, 0, true);
        }
        assert_eq!(f.adjust(6, 2, 0), (0, Some(AdaptedFrom::WithinBudget(2))));
        assert_eq!(f.adjust(6, 2, 1), (2, None), "never below the minimum");
    }

    #[test]
    fn a_closed_cell_stays_closed_as_its_failures_fade() {
        let f = family(0.0);
        feed(&f, 1, 2, 45, 5);
        feed(&f, 1, 0, 5, 45);
        assert_eq!(f.adjust(1, 0, 0).0, 1);
        // Only the strongest serves now: Micro's failures fade until they prove nothing...
        feed(&f, 1, 2, 1500, 100);
        // ...yet only fresh outcomes of Micro reopen the cell.
        assert_eq!(f.adjust(1, 0, 0).0, 1);
        assert_eq!(f.snapshot()[0].outcomes.verdicts[0], Verdict::OverBudget);
    }

    #[test]
    fn old_outcomes_fade_so_a_recovered_variant_is_heard() {
        let f = family(0.0);
        feed(&f, 1, 2, 45, 5);
        feed(&f, 1, 0, 5, 45);
        assert_eq!(f.adjust(1, 0, 0).0, 1);
        for _ in 0..300 {
            f.record(1, 2, true);
            f.record(1, 0, true);
        }
        assert_eq!(f.adjust(1, 0, 0), (0, None));
    }

    #[test]
    fn exploration_waits_for_feedback_then_alternates_up_and_down() {
        let f = family(0.25);
        let explored = |f: &FamilyFeedback| {
            (0..8)
                .map(|_| {
                    let (at, why) = f.adjust(4, 1, 0);
                    f.committed(4);
                    (at, why.is_some())
                })
                .filter(|(_, explored)| *explored)
                .map(|(at, _)| at)
                .collect::<Vec<_>>()
        };
        assert!(explored(&f).is_empty(), "no feedback yet");
        f.record(0, 0, true);
        assert_eq!(
            explored(&f),
            vec![2, 0],
            "the strongest, then the one below"
        );
        assert_eq!(explored(&f), vec![2, 0]);
    }

    #[test]
    fn out_of_range_outcomes_are_refused() {
        let f = family(0.0);
        assert!(!f.record(CELLS, 0, true));
        assert!(!f.record(0, 3, true));
        assert!(f.snapshot().is_empty(), "no cell has outcomes");
        assert_eq!(FamilyFeedback::cell(TASK_KINDS.len(), 0), None);
        assert_eq!(FamilyFeedback::cell(0, BANDS as u8), None);
    }
}
