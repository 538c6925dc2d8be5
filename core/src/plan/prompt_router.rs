//! Bedrock Intelligent Prompt Routing as a family's target: the request goes to the router's
//! ARN, Bedrock picks one of two models of the family, and the response names it.

use crate::config::Config;
use crate::types::ProfileScope;

pub use crate::config::parse_prompt_router_arn as parse_arn;

/// The configured model (and its inference profile, if any) behind an invoked model id as
/// Bedrock reports it: a model or inference-profile ARN, or a bare id.
///
/// ```
/// use laneway::{plan::prompt_router::configured_model, Config, config::ProfileScope};
/// let c = Config::default();
/// let id = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-haiku-4-5-20251001-v1:0";
/// assert_eq!(configured_model(&c, id), Some(("anthropic.claude-haiku-4-5-20251001-v1:0", Some("us".parse::<ProfileScope>().unwrap()))));
/// assert_eq!(configured_model(&c, "arn:aws:bedrock:us-east-1::foundation-model/unknown-model"), None);
/// ```
pub fn configured_model<'c>(
    config: &'c Config,
    invoked: &str,
) -> Option<(&'c str, Option<ProfileScope>)> {
    let id = invoked.rsplit('/').next().unwrap_or(invoked);
    let (profile, bare) = match id.split_once('.') {
        Some((p, rest)) => match config.profile_scope(p) {
            Some(scope) => (Some(scope), rest),
            None => (None, id),
        },
        None => (None, id),
    };
    config
        .models
        .get_key_value(bare)
        .map(|(k, _)| (k.as_str(), profile))
}
