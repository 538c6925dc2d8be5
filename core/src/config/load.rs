//! Loading: TOML or JSON over the built-in `defaults.toml`, tables merged key by key, then
//! validated.

use super::*;

const DEFAULTS: &str = include_str!("../../defaults.toml");

impl Config {
    /// Parses TOML over the built-in defaults: tables merge key by key, other values replace.
    /// With `builtin_models = false` the built-in models and families are left out.
    pub fn from_toml_str(text: &str) -> Result<Self> {
        Self::from_toml_str_unloaded(text)
    }

    fn from_toml_str_unloaded(text: &str) -> Result<Self> {
        let user: toml::Table = toml::from_str(text).map_err(|e| {
            Error::config(
                "<toml>",
                e.message().to_string() + &location(text, e.span()),
            )
        })?;
        Self::over_defaults(user)
    }

    /// The configuration's TOML layout as a JSON object (what a Python dict or a JavaScript
    /// object gives), over the built-in defaults as [`Config::from_toml_str`] does. JSON has no
    /// dates and TOML no null: a null is an error naming its key.
    ///
    /// ```
    /// let table = serde_json::json!({ "routing": { "max_attempts": 2 } });
    /// let config = laneway::Config::from_json(table.as_object().unwrap()).unwrap();
    /// assert_eq!(config.routing.max_attempts, 2);
    /// ```
    pub fn from_json(table: &serde_json::Map<String, serde_json::Value>) -> Result<Self> {
        let user = table
            .iter()
            .map(|(k, v)| Ok((k.clone(), toml_of(v, k)?)))
            .collect::<Result<toml::Table>>()?;
        Self::over_defaults(user)
    }

    fn over_defaults(mut user: toml::Table) -> Result<Self> {
        let mut merged: toml::Table = toml::from_str(DEFAULTS).expect("defaults.toml parses");
        if user.get("builtin_models").and_then(toml::Value::as_bool) == Some(false) {
            merged.remove("models");
            merged.remove("families");
            merged.remove("default_model");
        }
        replace_family_routing(&mut merged, &mut user);
        merge(&mut merged, user);
        let config: Config =
            serde_path_to_error::deserialize(toml::Value::Table(merged)).map_err(|e| {
                let path = e.path().to_string();
                Error::config(
                    if path == "." { "<root>".into() } else { path },
                    e.into_inner().message().to_string(),
                )
            })?;
        config.validate()?;
        Ok(config)
    }

    /// Reads a TOML file (see [`Config::from_toml_str`]).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::config(path.display().to_string(), format!("cannot read: {e}")))?;
        let mut config = Self::from_toml_str_unloaded(&text).map_err(|e| match e {
            Error::Config { field, reason } if field == "<toml>" => {
                Error::config(path.display().to_string(), reason)
            }
            other => other,
        })?;
        config.base_dir = path.parent().map(Path::to_path_buf);
        Ok(config)
    }
}

/// A JSON value as TOML; `path` names it in the error for a null.
fn toml_of(value: &serde_json::Value, path: &str) -> Result<toml::Value> {
    use serde_json::Value as J;
    Ok(match value {
        J::Null => {
            return Err(Error::config(
                path,
                "null is not a value (leave the key out for its default)",
            ));
        }
        J::Bool(b) => toml::Value::Boolean(*b),
        J::Number(n) => match n.as_i64() {
            Some(i) => toml::Value::Integer(i),
            None => toml::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        J::String(s) => toml::Value::String(s.clone()),
        J::Array(items) => toml::Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| toml_of(v, &format!("{path}[{i}]")))
                .collect::<Result<_>>()?,
        ),
        J::Object(map) => toml::Value::Table(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), toml_of(v, &format!("{path}.{k}"))?)))
                .collect::<Result<_>>()?,
        ),
    })
}

/// A family's routing is replaced whole, not merged key by key: a user's `router` (or
/// `prompt_router`) drops the default's `router` and `prompt_router`, since merging
/// `{ threshold = 0.2 }` into a default `{ max_strong_share = 0.3 }` would give a router with
/// both, and a prompt router is exclusive with a classifier. `router = false` turns a default
/// router off.
fn replace_family_routing(defaults: &mut toml::Table, user: &mut toml::Table) {
    let Some(toml::Value::Table(user_families)) = user.get_mut("families") else {
        return;
    };
    for (name, family) in user_families.iter_mut() {
        let toml::Value::Table(family) = family else {
            continue;
        };
        if !family.contains_key("router") && !family.contains_key("prompt_router") {
            continue;
        }
        if let Some(toml::Value::Table(default)) = defaults
            .get_mut("families")
            .and_then(|f| f.get_mut(name.as_str()))
        {
            default.remove("router");
            default.remove("prompt_router");
        }
        if family.get("router") == Some(&toml::Value::Boolean(false)) {
            family.remove("router");
        }
    }
}

fn merge(into: &mut toml::Table, from: toml::Table) {
    for (k, v) in from {
        match (into.get_mut(&k), v) {
            (Some(toml::Value::Table(a)), toml::Value::Table(b)) => merge(a, b),
            (_, v) => {
                into.insert(k, v);
            }
        }
    }
}

fn location(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    match span {
        Some(s) => {
            let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
            format!(" (line {line})")
        }
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_error(text: &str) -> (String, String) {
        match Config::from_toml_str(text).unwrap_err() {
            Error::Config { field, reason } => (field, reason),
            other => panic!("expected a config error, got {other:?}"),
        }
    }

    #[test]
    fn defaults_load_and_validate() {
        let c = Config::default();
        assert_eq!(c.families["nova"].variants.len(), 3);
        assert_eq!(c.slo_tiers.interactive, ServiceTier::Priority);
        assert!(c.models["anthropic.claude-sonnet-4-5-20250929-v1:0"].requires_profile());
    }

    #[test]
    fn malformed_toml_gives_the_line() {
        let (field, reason) = config_error("default_model = \n");
        assert_eq!(field, "<toml>");
        assert!(reason.contains("line 1"), "{reason}");
    }

    #[test]
    fn wrong_types_name_the_path() {
        let (field, reason) = config_error("[routing]\nmax_attempts = \"three\"\n");
        assert_eq!(field, "routing.max_attempts");
        assert!(
            reason.contains("three") || reason.contains("integer"),
            "{reason}"
        );
    }

    #[test]
    fn unknown_keys_are_refused() {
        let (field, reason) = config_error("[routing]\nmax_attempt = 2\n");
        assert!(field.starts_with("routing"), "{field}");
        assert!(reason.contains("max_attempt"), "{reason}");
    }

    #[test]
    fn contradictions_are_named() {
        let (field, reason) = config_error(
            "[models.\"x\"]\nprovider = \"bedrock\"\nregions = [\"us-east-1\"]\nrequires_profile = true\nprice = { input_per_1k = 1.0, output_per_1k = 1.0 }\n",
        );
        assert_eq!(field, "models.\"x\".requires_profile");
        assert!(reason.contains("no profiles"), "{reason}");

        let (field, reason) =
            config_error("[families.nova]\ndefault_variant = \"amazon.nova-lite-v2:0\"\n");
        assert_eq!(field, "families.nova.default_variant");
        assert!(reason.contains("amazon.nova-lite-v2:0"), "{reason}");

        let (field, _) =
            config_error("[models.\"amazon.nova-lite-v1:0\".price]\ninput_per_1k = -1.0\n");
        assert_eq!(field, "models.\"amazon.nova-lite-v1:0\".price.input_per_1k");

        let (field, reason) =
            config_error("[models.\"amazon.nova-lite-v1:0\"]\nregions = [\"mars-north-1\"]\n");
        assert_eq!(field, "models.\"amazon.nova-lite-v1:0\".regions");
        assert!(reason.contains("mars-north-1"), "{reason}");

        let (field, _) = config_error("default_model = \"nope\"\n");
        assert_eq!(field, "default_model");

        let (field, _) = config_error("[routing]\nmax_attempts = 0\n");
        assert_eq!(field, "routing.max_attempts");
    }

    #[test]
    fn a_models_keys_are_its_providers_and_errors_inside_it_name_their_path() {
        let sagemaker =
            "provider = \"sagemaker\"\nprice = { input_per_1k = 1.0, output_per_1k = 1.0 }\n";
        let (field, reason) =
            config_error(&format!("[models.\"x\"]\n{sagemaker}tiers = [\"flex\"]\n"));
        assert_eq!(field, "models.x");
        assert!(reason.contains("unknown field `tiers`"), "{reason}");
        assert!(
            reason.contains("a SageMaker model is placed by its endpoints"),
            "{reason}"
        );
        let (field, reason) = config_error(
            "[models.\"x\"]\nprovider = \"bedrock\"\nregions = [\"us-east-1\"]\n\
             price = { input_per_1k = 1.0, output_per_1k = 1.0, typo = 2.0 }\n",
        );
        assert_eq!(field, "models.x");
        assert!(
            reason.starts_with("price.typo: unknown field `typo`"),
            "{reason}"
        );
        assert!(!reason.contains("a Bedrock model's key"), "{reason}");
        let (_, reason) = config_error("[models.\"x\"]\nregions = [\"us-east-1\"]\n");
        assert!(reason.contains("missing field `provider`"), "{reason}");
    }

    #[test]
    fn routing_and_cache_policy_values_are_checked() {
        let (field, _) =
            config_error("[routing.budget]\nratio = -1.0\nmin_per_second = 1.0\nwindow = 1000.0\n");
        assert_eq!(field, "routing.budget.ratio");
        let (field, _) =
            config_error("[routing.hedge]\nenabled = true\nquantile = 1.5\nmin_delay = 10.0\n");
        assert_eq!(field, "routing.hedge.quantile");
        let (field, _) =
            config_error("[prompt_cache]\nenabled = true\nmargin = -0.1\ntask_reuse_prior = 1.0\n");
        assert_eq!(field, "prompt_cache.margin");
        let (field, reason) = config_error(
            "[models.m]\nprovider = \"sagemaker\"\nfallback_family = \"nope\"\nendpoints = [{ name = \"e\", region = \"us-east-1\", format = \"tgi\" }]\nprice = { input_per_1k = 0.1, output_per_1k = 0.2 }\n",
        );
        assert_eq!(field, "models.\"m\".fallback_family");
        assert!(reason.contains("nope"), "{reason}");
    }

    #[test]
    fn self_hosted_instances_are_priced_by_the_hour() {
        let endpoint = |extra: &str| {
            format!(
                "[models.m]\nprovider = \"sagemaker\"\nendpoints = [{{ name = \"e\", region = \"us-east-1\", format = \"tgi\"{extra} }}]\nprice = {{ input_per_1k = 0.1, output_per_1k = 0.2 }}\n"
            )
        };
        let c = Config::from_toml_str(&endpoint(
            ", instance_type = \"ml.g5.12xlarge\", instance_count = 2",
        ))
        .unwrap();
        let e = &c.models["m"].endpoints()[0];
        assert_eq!(e.hourly_usd(&c.pricing), Some(2.0 * 7.09));
        let (field, reason) = config_error(&endpoint(", instance_type = \"ml.x9.huge\""));
        assert_eq!(field, "models.\"m\".endpoints[0].instance_type");
        assert!(reason.contains("instance_hourly"), "{reason}");
        let (field, _) = config_error(&endpoint(", instance_count = 0"));
        assert_eq!(field, "models.\"m\".endpoints[0].instance_count");
        let (field, _) = config_error("[pricing.instance_hourly]\n\"ml.g5.xlarge\" = -1.0\n");
        assert!(field.starts_with("pricing.instance_hourly"), "{field}");
    }

    #[test]
    fn the_redis_password_never_shows() {
        let secret = "s3cret-Pa55";
        let c = Config::from_toml_str(&format!(
            "[shared]\nredis_url = \"redis://app:{secret}@127.0.0.1:6379/0\"\n"
        ))
        .unwrap();
        let debug = format!("{c:?} {c:#?}");
        assert!(!debug.contains(secret), "{debug}");
        assert!(debug.contains("redis://app:***@127.0.0.1:6379/0"));
        let (_, why) = config_error(&format!(
            "[shared]\nredis_url = \"http://:{secret}@127.0.0.1:6379\"\n"
        ));
        assert!(!why.contains(secret), "{why}");
        assert!(why.contains("http://:***@127.0.0.1:6379"), "{why}");
    }

    #[test]
    fn builtin_models_can_be_left_out() {
        let c = Config::from_toml_str(
            "builtin_models = false\n[models.m]\nprovider = \"sagemaker\"\nendpoints = [{ name = \"e\", region = \"us-east-1\", format = \"tgi\" }]\nprice = { input_per_1k = 0.1, output_per_1k = 0.2 }\n",
        )
        .unwrap();
        assert_eq!(c.models.len(), 1);
        assert!(c.families.is_empty());
        assert!(c.default_model.is_none());
    }
}
