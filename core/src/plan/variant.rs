//! Which model serves the request: a concrete model, a pinned profile, or a family's variant.

use crate::config::{Config, ProfileScope};
use crate::error::{Error, Result};
use crate::plan::Reason;
use crate::request::{GenerateRequest, ModelRef};

/// The model chosen, with the family and pinned profile it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChosenModel {
    pub model: String,
    pub family: Option<String>,
    pub pinned_profile: Option<ProfileScope>,
}

/// Resolves the request's model reference against the configuration.
pub fn choose(
    request: &GenerateRequest,
    config: &Config,
    reasons: &mut Vec<Reason>,
) -> Result<ChosenModel> {
    let name = match &request.model {
        ModelRef::Default => {
            let name = config.default_model.as_deref().ok_or_else(|| {
                Error::invalid(
                    "model",
                    "the request names no model and the configuration has no default_model",
                )
            })?;
            reasons.push(Reason::DefaultModel {
                name: name.to_string(),
            });
            name
        }
        ModelRef::Family(f) => {
            if !config.families.contains_key(f) {
                return Err(Error::invalid(
                    "model",
                    format!(
                        "unknown family {f:?} (configured: {})",
                        known(config.families.keys())
                    ),
                ));
            }
            f.as_str()
        }
        ModelRef::Model(m) => m.as_str(),
    };
    if let Some(family) = config.families.get(name) {
        let variant = family.default_variant().to_string();
        reasons.push(Reason::FamilyDefaultVariant {
            family: name.to_string(),
            variant: variant.clone(),
        });
        return Ok(ChosenModel {
            model: variant,
            family: Some(name.to_string()),
            pinned_profile: None,
        });
    }
    if config.models.contains_key(name) {
        reasons.push(Reason::ModelRequested {
            model: name.to_string(),
        });
        return Ok(ChosenModel {
            model: name.to_string(),
            family: None,
            pinned_profile: None,
        });
    }
    if let Some((prefix, bare)) = name.split_once('.') {
        if let (Some(profile), Some(model)) =
            (ProfileScope::from_prefix(prefix), config.models.get(bare))
        {
            if !model.profiles.contains(&profile) {
                return Err(Error::invalid(
                    "model",
                    format!("{name:?}: the configuration lists no {prefix} inference profile for {bare}"),
                ));
            }
            reasons.push(Reason::ModelRequested {
                model: bare.to_string(),
            });
            reasons.push(Reason::ProfilePinned { profile });
            return Ok(ChosenModel {
                model: bare.to_string(),
                family: None,
                pinned_profile: Some(profile),
            });
        }
    }
    Err(Error::invalid(
        "model",
        format!(
            "unknown model {name:?}: not a configured model, inference profile or family (families: {}; models: {})",
            known(config.families.keys()),
            known(config.models.keys())
        ),
    ))
}

fn known<'a>(names: impl Iterator<Item = &'a String>) -> String {
    let v: Vec<&str> = names.map(String::as_str).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choose_for(req: GenerateRequest) -> Result<ChosenModel> {
        choose(&req, &Config::default(), &mut Vec::new())
    }

    #[test]
    fn families_models_profiles_and_default() {
        assert_eq!(
            choose_for(GenerateRequest::user("x")).unwrap().model,
            "amazon.nova-lite-v1:0"
        );
        assert_eq!(
            choose_for(GenerateRequest::user("x").family("claude"))
                .unwrap()
                .family
                .as_deref(),
            Some("claude")
        );
        assert_eq!(
            choose_for(GenerateRequest::user("x").model("nova"))
                .unwrap()
                .family
                .as_deref(),
            Some("nova")
        );
        let pinned =
            choose_for(GenerateRequest::user("x").model("eu.amazon.nova-pro-v1:0")).unwrap();
        assert_eq!(pinned.model, "amazon.nova-pro-v1:0");
        assert_eq!(pinned.pinned_profile, Some(ProfileScope::Eu));
    }

    #[test]
    fn unknown_names_are_named() {
        let e = choose_for(GenerateRequest::user("x").model("gpt-17"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"gpt-17\"") && e.contains("nova"), "{e}");
        let e = choose_for(GenerateRequest::user("x").family("llama"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown family \"llama\""), "{e}");
        let e = choose_for(GenerateRequest::user("x").model("apac.amazon.nova-pro-v1:0"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("apac"), "{e}");
    }
}
