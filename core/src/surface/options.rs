//! How a binding builds a router: [`RouterOptions`], the configuration included.

use std::path::Path;

use serde::Deserialize;

use crate::client::RouterBuilder;
use crate::config::Config;
use crate::types::{Error, Result};

/// A router's options as a binding receives them (keys snake_case; Node's facade sends the
/// same keys).
///
/// ```
/// use laneway::surface::RouterOptions;
/// let options: RouterOptions = serde_json::from_value(serde_json::json!({
///     "config": { "routing": { "max_attempts": 2 } },
///     "endpoint_url": "http://127.0.0.1:4566",
///     "access_key_id": "test",
///     "secret_access_key": "test",
/// })).unwrap();
/// let config = options.config().unwrap();
/// assert_eq!(config.routing.max_attempts, 2);
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouterOptions {
    /// The configuration; omitted, the built-in one.
    #[serde(default)]
    pub config: Option<ConfigInput>,
    /// A path to a TOML configuration file, named as one (instead of `config`).
    #[serde(default)]
    pub config_path: Option<String>,
    /// Send every call here (the emulator) instead of AWS.
    #[serde(default)]
    pub endpoint_url: Option<String>,
    /// Static credentials; omitted, AWS's default chain. The two go together.
    #[serde(default)]
    pub access_key_id: Option<String>,
    /// The secret access key of `access_key_id`.
    #[serde(default)]
    pub secret_access_key: Option<String>,
    /// A Bedrock API key, sent as a bearer token to Bedrock's OpenAI-compatible endpoints
    /// ([`RouterBuilder::bedrock_api_key`]).
    #[serde(default)]
    pub bedrock_api_key: Option<String>,
}

/// A configuration as a binding's caller gives it.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ConfigInput {
    /// The TOML layout as a JSON object (a Python dict, a JavaScript object).
    Table(serde_json::Map<String, serde_json::Value>),
    /// TOML text, or a path to a TOML file: see [`ConfigInput::load`].
    Text(String),
}

impl ConfigInput {
    /// The configuration over the built-in defaults.
    ///
    /// Text is a path when it is one line with no `=` (no TOML document with a setting is),
    /// and then the file must exist; otherwise it is TOML. An empty text is the built-in
    /// configuration.
    pub fn load(&self) -> Result<Config> {
        match self {
            ConfigInput::Table(table) => Config::from_json(table),
            ConfigInput::Text(text) if looks_like_path(text) => Config::from_file(Path::new(text)),
            ConfigInput::Text(text) => Config::from_toml_str(text),
        }
    }
}

fn looks_like_path(text: &str) -> bool {
    let text = text.trim();
    !text.is_empty() && !text.contains('\n') && !text.contains('=') && !text.starts_with('[')
}

impl RouterOptions {
    /// The configuration the options name.
    pub fn config(&self) -> Result<Config> {
        match (&self.config, &self.config_path) {
            (Some(_), Some(_)) => Err(Error::config(
                "config_path",
                "give a configuration or a path to one, not both",
            )),
            (Some(config), None) => config.load(),
            (None, Some(path)) => Config::from_file(Path::new(path)),
            (None, None) => Ok(Config::default()),
        }
    }

    /// A router builder with these options applied.
    pub fn builder(&self) -> Result<RouterBuilder> {
        let mut b = crate::client::Router::builder().config(self.config()?);
        if let Some(url) = &self.endpoint_url {
            b = b.endpoint_url(url.clone());
        }
        if let Some(key) = &self.bedrock_api_key {
            b = b.bedrock_api_key(key.clone());
        }
        match (&self.access_key_id, &self.secret_access_key) {
            (Some(id), Some(secret)) => b = b.static_credentials(id.clone(), secret.clone()),
            (None, None) => {}
            _ => {
                return Err(Error::config(
                    "access_key_id",
                    "access_key_id and secret_access_key go together",
                ));
            }
        }
        Ok(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn options(v: serde_json::Value) -> RouterOptions {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_configuration_as_a_table_text_or_path() {
        let table = options(json!({ "config": { "routing": { "max_attempts": 2 } } }));
        assert_eq!(table.config().unwrap().routing.max_attempts, 2);
        let text = options(json!({ "config": "[routing]\nmax_attempts = 3\n" }));
        assert_eq!(text.config().unwrap().routing.max_attempts, 3);
        let dir = std::env::temp_dir().join(format!("laneway-options-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("laneway.toml");
        std::fs::write(&path, "[routing]\nmax_attempts = 4\n").unwrap();
        let file = options(json!({ "config": path.to_str().unwrap() }));
        assert_eq!(file.config().unwrap().routing.max_attempts, 4);
        let named = options(json!({ "config_path": path.to_str().unwrap() }));
        assert_eq!(named.config().unwrap().routing.max_attempts, 4);
        let both = options(json!({ "config": "", "config_path": path.to_str().unwrap() }));
        assert!(both.config().unwrap_err().to_string().contains("not both"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            options(json!({})).config().unwrap().routing.max_attempts,
            Config::default().routing.max_attempts
        );
    }

    #[test]
    fn a_mistyped_path_is_an_error_not_toml() {
        let e = options(json!({ "config": "./no/such/laneway.toml" }))
            .config()
            .unwrap_err();
        assert_eq!(e.kind(), crate::types::ErrorKind::Config);
        assert!(e.to_string().contains("no/such/laneway.toml"), "{e}");
    }

    #[test]
    fn bad_options_name_what_is_wrong() {
        let e = serde_json::from_value::<RouterOptions>(json!({ "endpoint": "x" })).unwrap_err();
        assert!(e.to_string().contains("endpoint"), "{e}");
        let half = options(json!({ "access_key_id": "a" }))
            .builder()
            .unwrap_err();
        assert!(half.to_string().contains("go together"), "{half}");
        let typo = options(json!({ "config": { "routing": { "max_atempts": 2 } } }))
            .config()
            .unwrap_err();
        assert!(typo.to_string().contains("max_atempts"), "{typo}");
        let null = options(json!({ "config": { "default_model": null } }))
            .config()
            .unwrap_err();
        assert!(null.to_string().contains("default_model"), "{null}");
    }
}
