//! Candidate configurations: a model, family or self-hosted endpoint, a service tier (or the
//! tier the SLO picks), the regions allowed, and how many requests are in flight. Built from a
//! preset (the three product shapes), from a grid of flags, or from a TOML file.

use std::path::Path;

use anyhow::{Context, bail};
use laneway::{Config, GenerateRequest, Residency, ServiceTier};
use serde::{Deserialize, Serialize};

use super::workload::WorkloadKind;

/// One configuration to measure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Candidate {
    pub name: String,
    /// A model id, a family name (its variants routed by the classifier) or a self-hosted
    /// model's name.
    pub model: String,
    /// A tier for every call; none lets each request's SLO class pick it.
    #[serde(default)]
    pub tier: Option<ServiceTier>,
    /// Only these regions (and no cross-region profile); none allows every region and profile.
    #[serde(default)]
    pub regions: Option<Vec<String>>,
    pub concurrency: usize,
}

impl Candidate {
    /// Applies this candidate to a workload request.
    pub(crate) fn apply(&self, config: &Config, mut request: GenerateRequest) -> GenerateRequest {
        request = if config.families.contains_key(&self.model) {
            request.family(self.model.clone())
        } else {
            request.model(self.model.clone())
        };
        if let Some(t) = self.tier {
            request = request.tier(t);
        }
        if let Some(r) = &self.regions {
            request = request.residency(Residency::Regions(r.clone()));
        }
        request
    }

    /// Checks the candidate against the router's configuration.
    pub(crate) fn check(&self, config: &Config) -> anyhow::Result<()> {
        if self.concurrency == 0 {
            bail!("candidate {:?}: concurrency must be at least 1", self.name);
        }
        if !config.families.contains_key(&self.model) && !config.models.contains_key(&self.model) {
            bail!(
                "candidate {:?}: {:?} is neither a configured model nor a family",
                self.name,
                self.model
            );
        }
        for r in self.regions.iter().flatten() {
            if !config.regions.iter().any(|c| &c.name == r) {
                bail!("candidate {:?}: region {r:?} is not configured", self.name);
            }
        }
        Ok(())
    }
}

/// The built-in product shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Preset {
    /// An interactive chat or copilot: TTFT-bound chat turns on Claude and Nova.
    Chat,
    /// A high-throughput enterprise API: long generations on Nova, standard vs flex.
    EnterpriseApi,
    /// A self-hosted model on SageMaker endpoints (small and large instances) against a
    /// Bedrock family on the same workload.
    SelfHosted,
}

impl Preset {
    /// The workload the shape is measured on.
    pub(crate) fn workload(self) -> WorkloadKind {
        match self {
            Preset::Chat | Preset::SelfHosted => WorkloadKind::Interact,
            Preset::EnterpriseApi => WorkloadKind::Generate,
        }
    }

    pub(crate) fn candidates(self) -> Vec<Candidate> {
        let c = |name: &str, model: &str, tier: Option<ServiceTier>, concurrency| Candidate {
            name: name.into(),
            model: model.into(),
            tier,
            regions: None,
            concurrency,
        };
        const STANDARD: ServiceTier = ServiceTier::STANDARD;
        const PRIORITY: ServiceTier = ServiceTier::PRIORITY;
        const FLEX: ServiceTier = ServiceTier::FLEX;
        match self {
            Preset::Chat => vec![
                c("claude family, SLO tiers", "claude", None, 16),
                c("claude family, standard", "claude", Some(STANDARD), 16),
                c(
                    "haiku, priority",
                    "anthropic.claude-haiku-4-5-20251001-v1:0",
                    Some(PRIORITY),
                    16,
                ),
                c(
                    "haiku, standard",
                    "anthropic.claude-haiku-4-5-20251001-v1:0",
                    Some(STANDARD),
                    16,
                ),
                c(
                    "sonnet, priority",
                    "anthropic.claude-sonnet-4-5-20250929-v1:0",
                    Some(PRIORITY),
                    16,
                ),
                c("nova family, SLO tiers", "nova", None, 16),
            ],
            Preset::EnterpriseApi => vec![
                c("nova family, standard, 32", "nova", Some(STANDARD), 32),
                c("nova family, flex, 32", "nova", Some(FLEX), 32),
                c(
                    "nova lite, standard, 64",
                    "amazon.nova-lite-v1:0",
                    Some(STANDARD),
                    64,
                ),
                c(
                    "nova lite, flex, 64",
                    "amazon.nova-lite-v1:0",
                    Some(FLEX),
                    64,
                ),
                c(
                    "nova pro, standard, 32",
                    "amazon.nova-pro-v1:0",
                    Some(STANDARD),
                    32,
                ),
            ],
            Preset::SelfHosted => vec![
                c("endpoint ml.g5.xlarge x1, 8", "laneway-demo-llm", None, 8),
                c(
                    "endpoint ml.g5.12xlarge x1, 32",
                    "laneway-demo-llm-large",
                    None,
                    32,
                ),
                c(
                    "endpoint ml.g5.12xlarge x1, 8",
                    "laneway-demo-llm-large",
                    None,
                    8,
                ),
                c("bedrock nova family, 8", "nova", Some(STANDARD), 8),
                c("bedrock nova family, 32", "nova", Some(STANDARD), 32),
            ],
        }
    }
}

/// A grid: every model x tier x region set x concurrency.
pub(super) fn grid(
    models: &[String],
    tiers: &[String],
    regions: &[String],
    concurrency: &[usize],
) -> anyhow::Result<Vec<Candidate>> {
    let tiers: Vec<Option<ServiceTier>> = if tiers.is_empty() {
        vec![None]
    } else {
        tiers
            .iter()
            .map(|t| match t.as_str() {
                "auto" => Ok(None),
                other => serde_json::from_value(serde_json::Value::String(other.into()))
                    .map(Some)
                    .map_err(|_| {
                        anyhow::anyhow!(
                            "--tier {other:?}: expected auto, priority, standard, flex or reserved"
                        )
                    }),
            })
            .collect::<anyhow::Result<_>>()?
    };
    let regions: Vec<Option<Vec<String>>> = if regions.is_empty() {
        vec![None]
    } else {
        regions
            .iter()
            .map(|r| match r.as_str() {
                "any" => None,
                set => Some(set.split('+').map(str::to_string).collect()),
            })
            .collect()
    };
    let concurrency = if concurrency.is_empty() {
        &[16][..]
    } else {
        concurrency
    };
    let mut out = Vec::new();
    for m in models {
        for t in &tiers {
            for r in &regions {
                for &c in concurrency {
                    let mut name = m.clone();
                    name += &format!(
                        ", {}",
                        t.map(|t| t.to_string()).unwrap_or("SLO tiers".into())
                    );
                    if let Some(r) = r {
                        name += &format!(", {}", r.join("+"));
                    }
                    name += &format!(", {c}");
                    out.push(Candidate {
                        name,
                        model: m.clone(),
                        tier: *t,
                        regions: r.clone(),
                        concurrency: c,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// Reads `[[candidates]]` from a TOML file.
pub(super) fn read(path: &Path) -> anyhow::Result<Vec<Candidate>> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct File {
        candidates: Vec<Candidate>,
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let file: File =
        toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    Ok(file.candidates)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_fit_the_demo_configuration() {
        let config = Config::from_toml_str(include_str!("../../../examples/startup.toml")).unwrap();
        for p in [Preset::Chat, Preset::EnterpriseApi, Preset::SelfHosted] {
            for c in p.candidates() {
                c.check(&config).unwrap();
            }
        }
    }

    #[test]
    fn the_grid_is_a_cross_product() {
        let g = grid(
            &["nova".into(), "amazon.nova-lite-v1:0".into()],
            &["standard".into(), "auto".into()],
            &["us-east-1+us-west-2".into()],
            &[8, 32],
        )
        .unwrap();
        assert_eq!(g.len(), 8);
        assert_eq!(
            g[0].regions.as_deref(),
            Some(&["us-east-1".to_string(), "us-west-2".to_string()][..])
        );
        assert!(
            grid(&["nova".into()], &["fast".into()], &[], &[])
                .unwrap_err()
                .to_string()
                .contains("fast")
        );
    }
}
