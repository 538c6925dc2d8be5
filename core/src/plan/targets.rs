//! Which targets, in which order: in-region model ids, geographic and global inference profiles,
//! or SageMaker endpoints, restricted by residency and capped by `routing.max_attempts`.

use crate::config::{Config, ModelConfig, ProfileScope, Provider};
use crate::error::{Error, Result};
use crate::plan::variant::ChosenModel;
use crate::plan::{Exclusion, Reason, Target};
use crate::request::{GenerateRequest, Residency};

/// The candidate targets, best first.
///
/// Order: for each configured region in turn, the in-region id, then the region's geographic
/// profile; global profiles come last, as they may process the request anywhere.
pub fn enumerate(
    request: &GenerateRequest,
    chosen: &ChosenModel,
    model: &ModelConfig,
    config: &Config,
    reasons: &mut Vec<Reason>,
) -> Result<Vec<Target>> {
    let mut candidates = match model.provider {
        Provider::Bedrock => {
            bedrock_candidates(&chosen.model, model, chosen.pinned_profile, config, reasons)
        }
        Provider::Sagemaker => model
            .endpoints
            .iter()
            .map(|e| Target::Sagemaker {
                region: e.region.clone(),
                endpoint: e.clone(),
            })
            .collect(),
    };
    if let Some(residency) = &request.residency {
        candidates.retain(|t| {
            let ok = allowed(t, residency, config);
            if !ok {
                reasons.push(Reason::TargetExcluded {
                    target: t.id().to_string(),
                    region: t.region().to_string(),
                    why: Exclusion::Residency,
                });
            }
            ok
        });
    }
    if candidates.is_empty() {
        return Err(Error::invalid(
            "residency",
            format!(
                "no target of {} satisfies the request's residency {:?}",
                chosen.model, request.residency
            ),
        ));
    }
    let limit = config.routing.max_attempts as usize;
    for t in candidates.iter().skip(limit) {
        reasons.push(Reason::TargetExcluded {
            target: t.id().to_string(),
            region: t.region().to_string(),
            why: Exclusion::AttemptLimit,
        });
    }
    candidates.truncate(limit);
    reasons.push(Reason::TargetsOrdered {
        first: candidates[0].id().to_string(),
        region: candidates[0].region().to_string(),
        fallbacks: candidates.len() - 1,
    });
    Ok(candidates)
}

fn bedrock_candidates(
    model_id: &str,
    model: &ModelConfig,
    pinned: Option<ProfileScope>,
    config: &Config,
    reasons: &mut Vec<Reason>,
) -> Vec<Target> {
    let regions = config
        .regions
        .iter()
        .filter(|r| model.regions.contains(&r.name));
    let mut local = Vec::new();
    let mut global = Vec::new();
    for region in regions {
        let profile_target = |scope: ProfileScope| Target::Bedrock {
            region: region.name.clone(),
            model_id: format!("{}.{model_id}", scope.prefix()),
            profile: Some(scope),
        };
        let bare = Target::Bedrock {
            region: region.name.clone(),
            model_id: model_id.to_string(),
            profile: None,
        };
        match (pinned, model.requires_profile) {
            (None, false) => local.push(bare),
            (None, true) => exclude(reasons, &bare, Exclusion::ProfileRequired),
            (Some(_), _) => exclude(reasons, &bare, Exclusion::OtherProfilePinned),
        }
        let geographic = model
            .profiles
            .iter()
            .copied()
            .find(|p| p.geography() == Some(region.geography));
        for scope in geographic.into_iter().chain(
            model
                .profiles
                .contains(&ProfileScope::Global)
                .then_some(ProfileScope::Global),
        ) {
            let t = profile_target(scope);
            if pinned.is_some_and(|p| p != scope) {
                exclude(reasons, &t, Exclusion::OtherProfilePinned);
            } else if scope == ProfileScope::Global {
                global.push(t);
            } else {
                local.push(t);
            }
        }
    }
    local.extend(global);
    local
}

fn exclude(reasons: &mut Vec<Reason>, t: &Target, why: Exclusion) {
    reasons.push(Reason::TargetExcluded {
        target: t.id().to_string(),
        region: t.region().to_string(),
        why,
    });
}

/// Whether a target keeps the request within the residency.
pub fn allowed(target: &Target, residency: &Residency, config: &Config) -> bool {
    match residency {
        Residency::Geography(g) => {
            config.geography_of(target.region()) == Some(*g)
                && match target.profile() {
                    None => true,
                    Some(p) => p.geography() == Some(*g),
                }
        }
        Residency::Regions(list) => {
            target.profile().is_none() && list.iter().any(|r| r == target.region())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::plan;
    use crate::request::Geography;

    fn ids(req: GenerateRequest, config: &Config) -> Vec<(String, String)> {
        plan(&req, config)
            .unwrap()
            .attempts
            .iter()
            .map(|a| (a.target.id().to_string(), a.target.region().to_string()))
            .collect()
    }

    #[test]
    fn in_region_first_then_profiles_then_global() {
        let mut c = Config::default();
        c.routing.max_attempts = 10;
        let t = ids(
            GenerateRequest::user("x").model("anthropic.claude-haiku-4-5-20251001-v1:0"),
            &c,
        );
        assert_eq!(
            t[0],
            (
                "us.anthropic.claude-haiku-4-5-20251001-v1:0".into(),
                "us-east-1".into()
            )
        );
        assert!(t.last().unwrap().0.starts_with("global."));
        assert!(t
            .iter()
            .all(|(id, _)| id != "anthropic.claude-haiku-4-5-20251001-v1:0"));
        let n = ids(
            GenerateRequest::user("x").model("amazon.nova-lite-v1:0"),
            &c,
        );
        assert_eq!(n[0], ("amazon.nova-lite-v1:0".into(), "us-east-1".into()));
        assert_eq!(
            n[1],
            ("us.amazon.nova-lite-v1:0".into(), "us-east-1".into())
        );
    }

    #[test]
    fn eu_residency_keeps_eu_and_drops_global() {
        let c = Config::default();
        let t = ids(
            GenerateRequest::user("x")
                .family("claude")
                .residency(Residency::Geography(Geography::Eu)),
            &c,
        );
        assert_eq!(
            t,
            vec![(
                "eu.anthropic.claude-sonnet-4-5-20250929-v1:0".to_string(),
                "eu-west-1".to_string()
            )]
        );
    }

    #[test]
    fn region_list_residency_forbids_profiles() {
        let c = Config::default();
        let e = plan(
            &GenerateRequest::user("x")
                .family("claude")
                .residency(Residency::Regions(vec!["eu-west-1".into()])),
            &c,
        )
        .unwrap_err();
        assert!(e.to_string().contains("residency"), "{e}");
    }

    #[test]
    fn attempts_are_capped() {
        let c = Config::default();
        assert_eq!(
            ids(GenerateRequest::user("x"), &c).len(),
            c.routing.max_attempts as usize
        );
    }
}
