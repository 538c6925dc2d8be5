//! Loading: TOML or JSON over the built-in `defaults.toml`, tables merged key by key, then
//! validated.

use super::raw::RawConfig;
use super::{Config, Error, Path, Result};

const DEFAULTS: &str = include_str!("../../defaults.toml");

/// `defaults.toml` as a table, parsed once: every load merges a copy of it.
fn defaults() -> &'static toml::Table {
    static TABLE: std::sync::LazyLock<toml::Table> =
        std::sync::LazyLock::new(|| toml::from_str(DEFAULTS).expect("defaults.toml parses"));
    &TABLE
}

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

    fn over_defaults(user: toml::Table) -> Result<Self> {
        Self::over(defaults().clone(), user)
    }

    /// `user` over `defaults`, templates applied, read and validated.
    fn over(defaults: toml::Table, user: toml::Table) -> Result<Self> {
        Self::from_table(whole(defaults, user)?)
    }

    /// The configuration a whole table (every default in place) describes: its tiers declared,
    /// read as [`RawConfig`], then validated into a `Config`.
    fn from_table(table: toml::Table) -> Result<Self> {
        super::tiers::declare(&table)?;
        let raw: RawConfig =
            serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
                let path = e.path().to_string();
                Error::config(
                    if path == "." { "<root>".into() } else { path },
                    e.into_inner().message().to_string(),
                )
            })?;
        Config::try_from(raw)
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

impl TryFrom<toml::Table> for Config {
    type Error = Error;

    /// What a whole table (every section present, as a `Config` serializes) describes: how
    /// serde reads a `Config` from any format, so that its `[tiers]` are declared before the
    /// sections that name them are read.
    fn try_from(table: toml::Table) -> Result<Self> {
        Self::from_table(table)
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

/// The whole table `user` describes: merged over `defaults` (tables key by key, other
/// values replace), every added table filled from its template.
fn whole(mut merged: toml::Table, mut user: toml::Table) -> Result<toml::Table> {
    if user.get("builtin_models").and_then(toml::Value::as_bool) == Some(false) {
        merged.remove("models");
        merged.remove("families");
        merged.remove("default_model");
    }
    rename_old_keys(&mut user);
    replace_family_routing(&mut merged, &mut user);
    narrow_to_user_regions(&mut merged, &user);
    merge(&mut merged, user);
    mantle_prefix_by_model_line(&mut merged);
    apply_templates(&mut merged)?;
    Ok(merged)
}

/// Where each template of `defaults.toml`'s `[templates]` applies: the tables at `path`
/// (`*`: every key of a table, `name[]`: every element of an array), of a model of `provider`
/// only where one is named.
struct Template {
    name: &'static str,
    path: &'static str,
    provider: Option<&'static str>,
}

const TEMPLATES: &[Template] = &[
    Template {
        name: "shared",
        path: "shared",
        provider: None,
    },
    Template {
        name: "batch",
        path: "batch",
        provider: None,
    },
    Template {
        name: "local_state",
        path: "local_state",
        provider: None,
    },
    Template {
        name: "record",
        path: "record",
        provider: None,
    },
    Template {
        name: "family_router",
        path: "families.*.router",
        provider: None,
    },
    Template {
        name: "bedrock_model",
        path: "models.*",
        provider: Some("bedrock"),
    },
    Template {
        name: "model_openai",
        path: "models.*.openai",
        provider: None,
    },
    Template {
        name: "model_mantle",
        path: "models.*.openai.mantle",
        provider: None,
    },
    Template {
        name: "model_prompt_cache",
        path: "models.*.prompt_cache",
        provider: None,
    },
    Template {
        name: "model_reasoning",
        path: "models.*.reasoning",
        provider: None,
    },
    Template {
        name: "model_price_scopes",
        path: "models.*.price.scopes",
        provider: None,
    },
    Template {
        name: "sagemaker_endpoint",
        path: "models.*.endpoints[]",
        provider: None,
    },
];

/// Reads every table a template applies to over its template (a key the table sets is its
/// own; a table it sets is filled from the template's the same way), and takes `[templates]`
/// out.
fn apply_templates(merged: &mut toml::Table) -> Result<()> {
    let Some(value) = merged.remove("templates") else {
        return Ok(());
    };
    let toml::Value::Table(templates) = value else {
        return Err(Error::config("templates", "must be a table of templates"));
    };
    for (name, template) in &templates {
        let known = TEMPLATES.iter().find(|t| t.name == name).ok_or_else(|| {
            let names: Vec<&str> = TEMPLATES.iter().map(|t| t.name).collect();
            Error::config(
                format!("templates.{name}"),
                format!("not a template; the templates are {}", names.join(", ")),
            )
        })?;
        let toml::Value::Table(template) = template else {
            return Err(Error::config(
                format!("templates.{name}"),
                "must be a table",
            ));
        };
        let path: Vec<&str> = known.path.split('.').collect();
        fill_from(merged, &path, template, known.provider);
    }
    Ok(())
}

/// A template of `defaults.toml` (`[templates.{name}]`) read as `T`.
pub(super) fn template<T: serde::de::DeserializeOwned>(name: &str) -> T {
    T::deserialize(defaults()["templates"][name].clone())
        .expect("a template of defaults.toml reads whole")
}

/// Gives `table` each key of `template` it lacks; a table both have is filled the same way.
fn fill(table: &mut toml::Table, template: &toml::Table) {
    for (key, value) in template {
        match (table.get_mut(key), value) {
            (Some(toml::Value::Table(own)), toml::Value::Table(inner)) => fill(own, inner),
            (Some(_), _) => {}
            (None, _) => {
                table.insert(key.clone(), value.clone());
            }
        }
    }
}

fn fill_from(
    table: &mut toml::Table,
    path: &[&str],
    template: &toml::Table,
    provider: Option<&str>,
) {
    let Some((step, rest)) = path.split_first() else {
        let of_provider =
            provider.is_none_or(|p| table.get("provider").and_then(toml::Value::as_str) == Some(p));
        if of_provider {
            fill(table, template);
        }
        return;
    };
    let descend = |value: &mut toml::Value| {
        if let toml::Value::Table(inner) = value {
            fill_from(inner, rest, template, provider);
        }
    };
    if *step == "*" {
        table.iter_mut().for_each(|(_, value)| descend(value));
    } else if let Some(array) = step.strip_suffix("[]") {
        if let Some(toml::Value::Array(items)) = table.get_mut(array) {
            items.iter_mut().for_each(descend);
        }
    } else if let Some(value) = table.get_mut(*step) {
        descend(value);
    }
}

/// Old names of keys, as their new names: the defaults carry the new name, and serde would
/// see both (`routing.reserved_window` is `routing.minute`).
fn rename_old_keys(user: &mut toml::Table) {
    if let Some(toml::Value::Table(routing)) = user.get_mut("routing")
        && !routing.contains_key("minute")
        && let Some(window) = routing.remove("reserved_window")
    {
        routing.insert("minute".into(), window);
    }
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

/// A user who narrows a built-in model's `regions` narrows with them the built-in lists that
/// are subsets of them (`in_region`, `openai.mantle.regions`), unless the user writes those
/// too: otherwise a file that only said `regions = ["us-east-1"]` would be refused for an
/// `in_region` it never wrote.
fn narrow_to_user_regions(defaults: &mut toml::Table, user: &toml::Table) {
    let Some(toml::Value::Table(user_models)) = user.get("models") else {
        return;
    };
    for (id, model) in user_models {
        let Some(toml::Value::Array(regions)) = model.get("regions") else {
            continue;
        };
        let Some(toml::Value::Table(builtin)) = defaults
            .get_mut("models")
            .and_then(|m| m.get_mut(id.as_str()))
        else {
            continue;
        };
        let keep = |list: &mut toml::Value| {
            if let toml::Value::Array(list) = list {
                list.retain(|r| regions.contains(r));
            }
        };
        if model.get("in_region").is_none()
            && let Some(list) = builtin.get_mut("in_region")
        {
            keep(list);
        }
        let user_mantle = model
            .get("openai")
            .and_then(|o| o.get("mantle"))
            .and_then(|m| m.get("regions"));
        if user_mantle.is_none()
            && let Some(list) = builtin
                .get_mut("openai")
                .and_then(|o| o.get_mut("mantle"))
                .and_then(|m| m.get_mut("regions"))
        {
            keep(list);
        }
    }
}

/// A model served by bedrock-mantle whose `openai.mantle` names no `prefix` gets its model
/// line's (`MantlePrefix::of_model` of its mantle id, else its key), before the template's.
fn mantle_prefix_by_model_line(merged: &mut toml::Table) {
    let Some(toml::Value::Table(models)) = merged.get_mut("models") else {
        return;
    };
    for (key, model) in models.iter_mut() {
        let Some(toml::Value::Table(mantle)) =
            model.get_mut("openai").and_then(|o| o.get_mut("mantle"))
        else {
            continue;
        };
        if mantle.contains_key("prefix") {
            continue;
        }
        let id = mantle
            .get("id")
            .and_then(toml::Value::as_str)
            .unwrap_or(key)
            .to_string();
        let prefix = super::MantlePrefix::of_model(&id).as_str();
        mantle.insert("prefix".into(), toml::Value::String(prefix.into()));
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
    use crate::config::{ModelConfig, RetryConfig};
    use crate::types::ServiceTier;
    use serde::Deserialize;
    use std::time::Duration;

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
        assert_eq!(c.slo_tiers.interactive, ServiceTier::PRIORITY.into());
        assert!(c.models["anthropic.claude-sonnet-4-5-20250929-v1:0"].requires_profile());
    }

    /// A configuration that adds a table of each kind a template applies to, each leaving
    /// out every key its template has.
    const EVERY_TEMPLATE_USED: &str = r#"
        [shared]
        redis_url = "redis://127.0.0.1:6379"
        [batch]
        bucket = "b"
        role_arn = "arn:aws:iam::123456789012:role/batch"
        [local_state]
        path = "state.json"
        [record]
        path = "trace.jsonl"
        [families.my-family]
        variants = ["amazon.nova-micro-v1:0", "amazon.nova-pro-v1:0"]
        router = { shadow = true }
        [models.mine]
        provider = "bedrock"
        regions = ["us-east-1"]
        openai = { runtime = ["chat_completions"], mantle = { apis = ["responses"] } }
        prompt_cache = { min_tokens = 1024, ttls = ["5m"] }
        reasoning = { format = "anthropic" }
        price = { input_per_1k = 0.1, output_per_1k = 0.2, scopes = {} }
        [models.endpoint]
        provider = "sagemaker"
        endpoints = [{ name = "e", region = "us-east-1", format = "tgi" }]
        price = { input_per_1k = 0.1, output_per_1k = 0.2 }
    "#;

    /// Every key of `defaults.toml`'s fixed sections and templates is a default written only
    /// there: left out, the configuration does not load, and the error names it. (A default
    /// also written in Rust would let it load.)
    #[test]
    fn every_default_is_written_only_in_defaults_toml() {
        let defaults = defaults().clone();
        let user: toml::Table = toml::from_str(EVERY_TEMPLATE_USED).unwrap();
        Config::over(defaults.clone(), user.clone()).expect("the sample loads");

        fn leaves(table: &toml::Table, at: &[String], out: &mut Vec<Vec<String>>) {
            for (key, value) in table {
                let path = [at, std::slice::from_ref(key)].concat();
                match value {
                    toml::Value::Table(inner) => leaves(inner, &path, out),
                    _ => out.push(path),
                }
            }
        }
        let mut paths = vec![vec!["builtin_models".to_string()]];
        for section in ["routing", "prompt_cache", "telemetry", "slo_tiers"] {
            leaves(
                defaults[section].as_table().unwrap(),
                &[section.into()],
                &mut paths,
            );
        }
        paths.push(vec!["pricing".into(), "batch".into()]);
        for sub in ["scopes", "tiers"] {
            let table = defaults["pricing"][sub].as_table().unwrap();
            leaves(table, &["pricing".into(), sub.into()], &mut paths);
        }
        // A template's keys are read whole (a table-valued key is one default).
        for (name, template) in defaults["templates"].as_table().unwrap() {
            for key in template.as_table().unwrap().keys() {
                paths.push(vec!["templates".into(), name.clone(), key.clone()]);
            }
        }
        assert!(paths.len() > 60, "{}", paths.len());

        for path in paths {
            let mut without = defaults.clone();
            let (last, parents) = path.split_last().unwrap();
            let mut table = &mut without;
            for step in parents {
                table = table
                    .get_mut(step)
                    .and_then(toml::Value::as_table_mut)
                    .unwrap();
            }
            table.remove(last).unwrap();
            let error = Config::over(without, user.clone())
                .map(|_| ())
                .expect_err(&format!("loads without {}", path.join(".")));
            assert!(
                error.to_string().contains(last.as_str()),
                "without {}: {error}",
                path.join(".")
            );
        }
    }

    /// The shape serde reads becomes a `Config` only through validation, however the
    /// `Config` is deserialized.
    #[test]
    fn a_config_deserialized_anywhere_is_a_validated_one() {
        let defaults = defaults().clone();
        let table = whole(defaults, toml::Table::new()).unwrap();
        let config = Config::deserialize(toml::Value::Table(table.clone())).unwrap();
        assert_eq!(config, Config::default());

        let mut invalid = table;
        invalid["routing"]["max_attempts"] = toml::Value::Integer(0);
        let error = Config::deserialize(toml::Value::Table(invalid)).unwrap_err();
        assert!(
            error.to_string().contains("routing.max_attempts"),
            "{error}"
        );
    }

    /// What a configuration writes, it reads back as itself.
    #[test]
    fn a_config_reads_back_what_it_writes() {
        let config = Config::from_toml_str(EVERY_TEMPLATE_USED).unwrap();
        let written = toml::Value::try_from(&config).unwrap();
        assert_eq!(Config::deserialize(written).unwrap(), config);
    }

    /// A configuration built in Rust is held to what a file is: a model's reasoning names a
    /// budget for every effort.
    #[test]
    fn a_models_tables_are_validated_however_the_config_was_made() {
        let mut config = Config::default();
        let Some(ModelConfig::Bedrock(sonnet)) =
            config.models.get_mut("anthropic.claude-sonnet-4-6")
        else {
            panic!("a built-in Bedrock model")
        };
        let reasoning = sonnet.reasoning.as_mut().unwrap();
        reasoning
            .effort_budgets
            .remove(&crate::types::ReasoningEffort::Max);
        let Error::Config { field, reason } = config.validate().unwrap_err() else {
            panic!()
        };
        assert_eq!(field, "models.\"anthropic.claude-sonnet-4-6\".reasoning");
        assert!(reason.contains("max"), "{reason}");
    }

    #[test]
    fn a_table_a_configuration_adds_is_read_over_its_template() {
        let c = Config::from_toml_str(EVERY_TEMPLATE_USED).unwrap();
        let shared = c.shared.as_ref().unwrap();
        assert_eq!(
            (shared.key_prefix.as_str(), shared.replicas),
            ("laneway", 1)
        );
        assert_eq!(c.batch.as_ref().unwrap().min_records, 100);
        let router = c.families["my-family"].router.as_ref().unwrap();
        assert_eq!(
            (router.model.as_str(), router.novelty_window),
            ("builtin", 50)
        );
        assert!(router.shadow);
        let ModelConfig::Bedrock(mine) = &c.models["mine"] else {
            panic!()
        };
        assert_eq!(mine.tiers, [ServiceTier::STANDARD].into());
        assert!(mine.openai.as_ref().unwrap().first);
        let mantle = mine.openai.as_ref().unwrap().mantle.as_ref().unwrap();
        assert_eq!(mantle.prefix, super::super::MantlePrefix::V1);
        assert_eq!(mine.output_burndown, 1);
        assert_eq!(mine.prompt_cache.as_ref().unwrap().max_checkpoints, 4);
        assert_eq!(mine.reasoning.as_ref().unwrap().min_budget_tokens, 1024);
        let scopes = mine.price.scopes.unwrap();
        assert_eq!((scopes.in_region, scopes.global), (1.0, 1.0));
        let ModelConfig::Sagemaker(endpoint) = &c.models["endpoint"] else {
            panic!()
        };
        assert_eq!(endpoint.endpoints[0].instance_count, 1);
        // A key the table sets is its own; a table it sets is filled from the template's.
        let c = Config::from_toml_str(&EVERY_TEMPLATE_USED.replace(
            r#"reasoning = { format = "anthropic" }"#,
            r#"reasoning = { format = "anthropic", efforts = ["high"], effort_budgets = { low = 2000 } }"#,
        ))
        .unwrap();
        let reasoning = c.models["mine"].reasoning().unwrap();
        assert_eq!(
            reasoning.efforts,
            [crate::types::ReasoningEffort::High].into()
        );
        let budgets: Vec<u32> = reasoning.effort_budgets.values().copied().collect();
        assert_eq!(budgets, [2000, 4096, 16384, 32000]);
    }

    #[test]
    fn templates_are_configuration_too() {
        let c = Config::from_toml_str(
            "[templates.family_router]\nexplore_share = 0.1\n[families.nova.router]\nmodel = \"builtin\"\n",
        )
        .unwrap();
        assert_eq!(
            c.families["nova"].router.as_ref().unwrap().explore_share,
            0.1
        );
        let (field, reason) = config_error("[templates.family]\nexplore_share = 0.1\n");
        assert_eq!(field, "templates.family");
        assert!(reason.contains("family_router"), "{reason}");
    }

    #[test]
    fn a_partial_section_keeps_the_other_defaults_and_old_names_still_read() {
        let c = Config::from_toml_str(
            "[routing]\nreserved_window = 1000\n[routing.timeouts.interactive]\ndeadline = 5000\n",
        )
        .unwrap();
        assert_eq!(c.routing.minute, Duration::from_secs(1));
        let interactive = c.routing.timeouts.interactive;
        assert_eq!(interactive.deadline, Duration::from_secs(5));
        assert_eq!(interactive.first_token, Duration::from_secs(10));
        assert_eq!(c.routing.retry, RetryConfig::default());
    }

    #[test]
    fn narrowing_a_built_in_models_regions_narrows_its_in_region_list() {
        let c = Config::from_toml_str(
            "[models.\"amazon.nova-lite-v1:0\"]\nregions = [\"us-east-1\", \"eu-central-1\"]\n",
        )
        .unwrap();
        let m = &c.models["amazon.nova-lite-v1:0"];
        assert_eq!(m.regions(), ["us-east-1", "eu-central-1"]);
        assert!(!m.requires_profile_in("us-east-1"));
        assert!(m.requires_profile_in("eu-central-1"));
        // An in_region the user writes is theirs, and checked against their regions.
        let e = Config::from_toml_str(
            "[models.\"amazon.nova-lite-v1:0\"]\nregions = [\"us-east-1\"]\nin_region = [\"us-east-2\"]\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("in_region"), "{e}");
    }

    #[test]
    fn a_mantle_model_without_a_prefix_gets_its_model_lines() {
        let c = Config::from_toml_str(
            r#"
            [models."openai.gpt-6-sol"]
            provider = "bedrock"
            converse = false
            regions = ["us-east-1"]
            price = { input_per_1k = 0.005, output_per_1k = 0.04 }
            openai.mantle = { apis = ["responses"] }
            [models."house.oss"]
            provider = "bedrock"
            converse = false
            regions = ["us-east-1"]
            price = { input_per_1k = 0.0001, output_per_1k = 0.0004 }
            openai.mantle = { apis = ["chat_completions"], id = "openai.gpt-oss-120b" }
            "#,
        )
        .unwrap();
        let prefix = |id: &str| {
            c.models[id]
                .openai()
                .unwrap()
                .mantle
                .as_ref()
                .unwrap()
                .prefix
        };
        assert_eq!(
            prefix("openai.gpt-6-sol"),
            super::super::MantlePrefix::OpenAiV1
        );
        assert_eq!(prefix("house.oss"), super::super::MantlePrefix::V1);
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
