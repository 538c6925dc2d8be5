//! Candidates' quality on a user's evaluation outcomes, for `laneway recommend --quality`.

use std::path::Path;

use anyhow::Context;
use laneway::Config;
use laneway::classifier::data::{Dataset, LoadOptions};

use crate::bench::Candidate;

/// Evaluation outcomes: prompts with, per model id, whether its answer was good enough.
pub(crate) struct Outcomes {
    data: Dataset,
}

impl Outcomes {
    /// Reads outcomes in the `router train` formats (CSV or JSONL, a directory of CSVs);
    /// `pass_mark` turns scores into good-or-not.
    pub(crate) fn load(path: &Path, pass_mark: Option<f64>) -> anyhow::Result<Self> {
        let opts = LoadOptions {
            pass_mark,
            ..LoadOptions::default()
        };
        let data = Dataset::load(&[path.to_path_buf()], &opts)
            .with_context(|| format!("reading evaluation outcomes {}", path.display()))?;
        Ok(Self { data })
    }

    /// The share of prompts the candidate answers well: its model's outcome on each prompt
    /// that has one; for a family, the outcome of the variant the router plans for that prompt.
    /// `None` when no prompt has an outcome for what the candidate would use.
    pub(crate) fn quality_of(
        &self,
        candidate: &Candidate,
        config: &Config,
    ) -> anyhow::Result<Option<f64>> {
        let column = |model: &str| self.data.variants.iter().position(|v| v == model);
        let family = config.families.contains_key(&candidate.model);
        let planner = if family {
            Some(laneway::plan::Planner::new(config)?)
        } else {
            None
        };
        let now = std::time::Instant::now();
        let (mut good, mut measured) = (0u64, 0u64);
        for row in &self.data.rows {
            let model = match &planner {
                Some(p) => {
                    let request = laneway::GenerateRequest::user(row.prompt.clone())
                        .family(candidate.model.clone());
                    p.plan(&request, config, &laneway::plan::Fresh(now))?
                        .model
                        .to_string()
                }
                None => candidate.model.clone(),
            };
            if let Some(outcome) = column(&model).and_then(|i| row.outcomes[i]) {
                measured += 1;
                good += u64::from(outcome);
            }
        }
        Ok((measured > 0).then(|| good as f64 / measured as f64))
    }
}
