//! Every configured model's name and candidate targets, made once when a [`Planner`] is built,
//! so that a plan shares them (reference counts) instead of formatting profile ids and copying
//! names on every call.
//!
//! [`Planner`]: super::Planner

use std::sync::Arc;

use foldhash::{HashMap, HashSet};

use crate::config::{Config, ModelConfig};
use crate::types::{Api, ProfileScope, Target};

/// The models of one configuration: their names and candidate targets, shared. Looked up
/// several times per call by a name the caller chose: foldhash (seeded per process) rather
/// than SipHash.
///
/// ```
/// use laneway::plan::Catalog;
/// let config = laneway::Config::default();
/// let catalog = Catalog::new(&config);
/// let ids: Vec<&str> = catalog
///     .candidates("amazon.nova-lite-v1:0")
///     .unwrap()
///     .iter()
///     .map(|c| c.target.id())
///     .collect();
/// assert_eq!(ids[..2], ["amazon.nova-lite-v1:0", "us.amazon.nova-lite-v1:0"]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Each model's candidates, keyed by its name (the key is the shared name).
    models: HashMap<Arc<str>, Vec<Candidate>>,
    families: HashSet<Arc<str>>,
}

/// One target a model may be sent to, before the request's residency, pinned profile and the
/// live state choose among them.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Where a call goes: the provider, the region and the id sent.
    pub target: Target,
    /// For a Bedrock target: the inference profile its id names (`None` for the bare model id).
    pub scope: Option<ProfileScope>,
}

impl Catalog {
    /// The catalog of `config`'s models and families.
    pub fn new(config: &Config) -> Self {
        let models = config
            .models
            .iter()
            .map(|(name, model)| (Arc::from(name.as_str()), candidates(name, model, config)))
            .collect();
        let families = config
            .families
            .keys()
            .map(|f| Arc::from(f.as_str()))
            .collect();
        Self { models, families }
    }

    /// A model's name, shared when it is configured (a new string otherwise).
    pub fn model_name(&self, model: &str) -> Arc<str> {
        self.models
            .get_key_value(model)
            .map_or_else(|| Arc::from(model), |(name, _)| Arc::clone(name))
    }

    /// A family's name, shared when it is configured (a new string otherwise).
    pub fn family_name(&self, family: &str) -> Arc<str> {
        self.families
            .get(family)
            .map_or_else(|| Arc::from(family), Arc::clone)
    }

    /// Every region a candidate target of some model is called in.
    pub fn regions(&self) -> std::collections::BTreeSet<&str> {
        self.models
            .values()
            .flatten()
            .map(|c| c.target.region())
            .collect()
    }

    /// A configured model's candidate targets: for Bedrock, each configured region's bare id
    /// and geographic profile in the configuration's region order, then the global profiles;
    /// SageMaker endpoints and other providers' regions in configured order.
    pub fn candidates(&self, model: &str) -> Option<&[Candidate]> {
        self.models.get(model).map(Vec::as_slice)
    }
}

/// The candidates of one model in `config`.
pub(crate) fn candidates(name: &str, model: &ModelConfig, config: &Config) -> Vec<Candidate> {
    let unscoped = |target| Candidate {
        target,
        scope: None,
    };
    match model {
        ModelConfig::Bedrock(_) => bedrock(name, model, config),
        ModelConfig::Sagemaker(_) => model
            .endpoints()
            .iter()
            .map(|e| unscoped(Target::sagemaker(e.region.as_str(), e.name.as_str())))
            .collect(),
        ModelConfig::Other(own) => {
            let id: Arc<str> = Arc::from(model.model_id().unwrap_or(name));
            model
                .regions()
                .iter()
                .map(|r| {
                    unscoped(Target::own(
                        own.provider.clone(),
                        r.as_str(),
                        Arc::clone(&id),
                    ))
                })
                .collect()
        }
    }
}

/// A Bedrock model's candidates by each API that serves it: Converse, bedrock-runtime's
/// OpenAI-compatible APIs (the same ids), bedrock-mantle (its mantle id in each of its mantle
/// regions, in the configuration's region order); the OpenAI-compatible ones first unless the
/// model's `openai.first` says otherwise.
fn bedrock(model_id: &str, model: &ModelConfig, config: &Config) -> Vec<Candidate> {
    let converse = if model.converse() {
        converse(model_id, model, config)
    } else {
        Vec::new()
    };
    let Some(openai) = model.openai() else {
        return converse;
    };
    let mut compatible = Vec::new();
    // The OpenAI-compatible APIs refuse application inference profiles.
    if !openai.runtime.is_empty() && model.application_profiles().is_empty() {
        let runtime = if model.converse() {
            converse.clone()
        } else {
            converse_ids(model_id, model, config)
        };
        compatible.extend(runtime.into_iter().map(|mut c| {
            c.target.api = Api::OpenAiRuntime;
            c
        }));
    }
    if let Some(mantle) = &openai.mantle {
        let id: Arc<str> = Arc::from(mantle.id.as_deref().unwrap_or(model_id));
        let serves = |region: &str| match &mantle.regions {
            Some(listed) => listed.iter().any(|r| r == region),
            None => model.regions().iter().any(|r| r == region),
        };
        compatible.extend(
            config
                .regions
                .iter()
                .filter(|r| serves(&r.name))
                .map(|r| Candidate {
                    target: Target::mantle(r.name.as_str(), Arc::clone(&id)),
                    scope: None,
                }),
        );
    }
    if openai.first {
        compatible.extend(converse);
        compatible
    } else {
        let mut all = converse;
        all.extend(compatible);
        all
    }
}

/// A Bedrock model's Converse candidates: its application profiles when it has them, else its
/// own ids.
fn converse(model_id: &str, model: &ModelConfig, config: &Config) -> Vec<Candidate> {
    if !model.application_profiles().is_empty() {
        // In the configuration's region order, as the model's own ids would be.
        let mut out: Vec<(usize, Candidate)> = model
            .application_profiles()
            .iter()
            .filter_map(|p| {
                let region = p.region()?;
                let order = config.regions.iter().position(|r| r.name == region)?;
                Some((
                    order,
                    Candidate {
                        target: Target::bedrock(region, p.arn.as_str(), p.wraps.clone()),
                        scope: p.wraps.clone(),
                    },
                ))
            })
            .collect();
        out.sort_by_key(|(order, _)| *order);
        return out.into_iter().map(|(_, c)| c).collect();
    }
    converse_ids(model_id, model, config)
}

/// A Bedrock model's in-region id and profiles, per configured region that serves it.
fn converse_ids(model_id: &str, model: &ModelConfig, config: &Config) -> Vec<Candidate> {
    let bare_id: Arc<str> = Arc::from(model_id);
    let profile_ids: Vec<(&ProfileScope, Arc<str>)> = model
        .profiles()
        .iter()
        .map(|scope| (scope, Arc::from(format!("{}.{model_id}", scope.prefix()))))
        .collect();
    let mut local = Vec::new();
    let mut global = Vec::new();
    for region in config
        .regions
        .iter()
        .filter(|r| model.regions().contains(&r.name))
    {
        let name: Arc<str> = Arc::from(region.name.as_str());
        let at = |id: &Arc<str>, scope: Option<&ProfileScope>| Candidate {
            target: Target::bedrock(Arc::clone(&name), Arc::clone(id), scope.cloned()),
            scope: scope.cloned(),
        };
        local.push(at(&bare_id, None));
        // Every geographic profile this region may call, the narrowest first (Tokyo: `jp.`
        // before `apac.`): it keeps requests closest, and a residency that allows the wider
        // one allows it too.
        let mut geographic: Vec<_> = profile_ids
            .iter()
            .filter(|(scope, _)| {
                scope
                    .geography()
                    .is_some_and(|g| config.in_geography(&region.name, g))
            })
            .collect();
        geographic.sort_by_key(|(scope, _)| {
            scope
                .geography()
                .map_or(0, |g| config.geography_regions(g).count())
        });
        local.extend(
            geographic
                .into_iter()
                .map(|(scope, id)| at(id, Some(scope))),
        );
        if let Some((scope, id)) = profile_ids.iter().find(|(s, _)| s.is_global()) {
            global.push(at(id, Some(scope)));
        }
    }
    local.extend(global);
    local
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Planner;
    use crate::plan::observe::Fresh;
    use crate::types::GenerateRequest;

    fn ids(c: &[Candidate]) -> Vec<(&str, &str)> {
        c.iter()
            .map(|c| (c.target.id(), c.target.region()))
            .collect()
    }

    #[test]
    fn candidates_follow_the_configuration_for_every_provider() {
        let config = Config::from_toml_str(
            "[models.tgi]\nprovider = \"sagemaker\"\n\
             endpoints = [{ name = \"b\", region = \"us-west-2\", format = \"tgi\" }, { name = \"a\", region = \"us-east-1\", format = \"tgi\" }]\n\
             price = { input_per_1k = 0.1, output_per_1k = 0.2 }\n\
             [models.small]\nprovider = \"house\"\nmodel_id = \"small-v3\"\nregions = [\"a\", \"b\"]\n\
             price = { input_per_1k = 0.1, output_per_1k = 0.2 }\n",
        )
        .unwrap();
        let catalog = Catalog::new(&config);
        // Bedrock: region by region (the configuration's order), the bare id then the region's
        // geographic profile; global profiles last.
        let haiku = catalog
            .candidates("anthropic.claude-haiku-4-5-20251001-v1:0")
            .unwrap();
        let h = ids(haiku);
        assert_eq!(
            h[0],
            ("anthropic.claude-haiku-4-5-20251001-v1:0", "us-east-1")
        );
        assert_eq!(
            h[1],
            ("us.anthropic.claude-haiku-4-5-20251001-v1:0", "us-east-1")
        );
        assert_eq!(
            h[5],
            ("eu.anthropic.claude-haiku-4-5-20251001-v1:0", "eu-west-1")
        );
        assert!(h[6..].iter().all(|(id, _)| id.starts_with("global.")));
        assert_eq!(h.len(), 9);
        assert_eq!(haiku[1].scope, Some("us".parse::<ProfileScope>().unwrap()));
        assert_eq!(haiku[0].scope, None);
        // One profile id per scope, shared by every region's target.
        assert!(Arc::ptr_eq(&haiku[6].target.id, &haiku[7].target.id));
        assert_eq!(
            ids(catalog.candidates("tgi").unwrap()),
            [("b", "us-west-2"), ("a", "us-east-1")]
        );
        assert_eq!(
            ids(catalog.candidates("small").unwrap()),
            [("small-v3", "a"), ("small-v3", "b")]
        );
        assert!(catalog.candidates("gpt-5").is_none());
        assert!(Arc::ptr_eq(
            &catalog.model_name("small"),
            &catalog.model_name("small")
        ));
        assert_eq!(&*catalog.model_name("gpt-5"), "gpt-5");
        assert_eq!(&*catalog.family_name("nova"), "nova");
    }

    #[test]
    fn a_model_the_catalog_lacks_is_still_planned_from_the_configuration() {
        let config = Config::default();
        let planner = Planner::new(&config).unwrap();
        let mut later = config.clone();
        let mut copy = later.models["amazon.nova-lite-v1:0"].clone();
        if let ModelConfig::Bedrock(spec) = &mut copy {
            spec.regions = vec!["eu-west-1".into()];
            spec.in_region = None;
        }
        later.models.insert("nova-lite-eu".into(), copy);
        let p = planner
            .plan(
                &GenerateRequest::user("x").model("nova-lite-eu"),
                &later,
                &Fresh(crate::time::now()),
            )
            .unwrap();
        assert_eq!(p.attempts[0].target.id(), "nova-lite-eu");
        assert!(p.attempts.iter().all(|a| a.target.region() == "eu-west-1"));
    }
}
