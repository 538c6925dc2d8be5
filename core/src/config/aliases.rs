//! `[aliases]`: other names for a family or a model, so that a request spelled as a framework
//! spells it (`gpt-4o`, `claude-3-5-sonnet`) reaches what the configuration routes; and which
//! names a request may give at all ([`Config::routes`]).

use super::{Config, Deserialize, Error, Result, Serialize};

/// What an alias names: a family (the plan picks its variant) or a model (a Bedrock model id,
/// an inference-profile id that pins the profile, or a SageMaker model's name).
///
/// ```toml
/// [aliases]
/// "gpt-4o" = { family = "claude" }
/// "gpt-4o-mini" = { model = "amazon.nova-lite-v1:0" }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Alias {
    /// A configured family.
    Family(String),
    /// A configured model, or an inference-profile id of one.
    Model(String),
}

impl Alias {
    /// The family's or model's name.
    pub fn target(&self) -> &str {
        match self {
            Alias::Family(name) | Alias::Model(name) => name,
        }
    }
}

impl Config {
    /// Each alias names a family or model the configuration has, and is not itself the name of
    /// one (the configured name would win silently).
    pub(super) fn validate_aliases(&self) -> Result<()> {
        for (name, alias) in &self.aliases {
            let field = || format!("aliases.{name:?}");
            let prompt_router = self
                .families
                .values()
                .any(|f| f.prompt_router.as_deref() == Some(name.as_str()));
            if self.families.contains_key(name)
                || self.models.contains_key(name)
                || self.is_profile_id(name)
                || prompt_router
            {
                return Err(Error::config(
                    field(),
                    "a configured family, model, profile id or prompt router has this name; an alias cannot rename it",
                ));
            }
            let known = match alias {
                Alias::Family(family) => self.families.contains_key(family),
                Alias::Model(model) => self.models.contains_key(model) || self.is_profile_id(model),
            };
            if !known {
                let what = match alias {
                    Alias::Family(_) => "family",
                    Alias::Model(_) => "model or inference profile",
                };
                return Err(Error::config(
                    field(),
                    format!("{:?} is not a configured {what}", alias.target()),
                ));
            }
        }
        Ok(())
    }

    /// Whether a request may name `name` as its model: a configured family, model, alias or
    /// profile id of a configured model, or a family's prompt router. The seams send a call
    /// for any other model where it was going.
    ///
    /// ```
    /// let config = laneway::Config::default();
    /// assert!(config.routes("nova") && config.routes("us.amazon.nova-lite-v1:0"));
    /// assert!(!config.routes("meta.llama3-70b-instruct-v1:0"));
    /// ```
    pub fn routes(&self, name: &str) -> bool {
        self.families.contains_key(name)
            || self.models.contains_key(name)
            || self.aliases.contains_key(name)
            || self.is_profile_id(name)
            || self
                .families
                .values()
                .any(|f| f.prompt_router.as_deref() == Some(name))
    }

    /// Whether `id` is a configured model's id behind a known profile prefix (`us.`, `global.`).
    fn is_profile_id(&self, id: &str) -> bool {
        id.split_once('.').is_some_and(|(prefix, bare)| {
            self.profile_scope(prefix).is_some() && self.models.contains_key(bare)
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    #[test]
    fn an_alias_names_a_family_a_model_or_a_profile() {
        let config = Config::from_toml_str(
            r#"
            [aliases]
            "gpt-4o" = { family = "claude" }
            "gpt-4o-mini" = { model = "amazon.nova-lite-v1:0" }
            "fast" = { model = "us.amazon.nova-lite-v1:0" }
            "#,
        )
        .unwrap();
        assert_eq!(config.aliases["gpt-4o"].target(), "claude");
        assert_eq!(config.aliases.len(), 3);
    }

    #[test]
    fn an_alias_of_nothing_or_of_a_configured_name_is_refused_by_name() {
        for (toml, field, says) in [
            (
                r#""gpt-4o" = { family = "nope" }"#,
                "aliases.\"gpt-4o\"",
                "not a configured family",
            ),
            (
                r#""x" = { model = "nope" }"#,
                "aliases.\"x\"",
                "not a configured model",
            ),
            (
                r#""claude" = { family = "nova" }"#,
                "aliases.\"claude\"",
                "cannot rename",
            ),
            (r#""x" = { family = "nova", model = "y" }"#, "aliases", ""),
        ] {
            let err = Config::from_toml_str(&format!("[aliases]\n{toml}\n")).unwrap_err();
            let text = err.to_string();
            assert!(text.contains(field), "{toml}: {text}");
            assert!(text.contains(says), "{toml}: {text}");
        }
    }
}
