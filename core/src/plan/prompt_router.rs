//! Bedrock Intelligent Prompt Routing as a family's target: the request goes to the router's
//! ARN, Bedrock picks one of two models of the family, and the response names it.

use crate::config::{Config, ProfileScope};

/// The region and router name of a prompt-router ARN
/// (`arn:aws:bedrock:{region}:{account}:default-prompt-router/{name}` or `.../prompt-router/{id}`).
///
/// ```
/// use laneway::plan::prompt_router::parse_arn;
/// let arn = "arn:aws:bedrock:us-east-1:123456789012:default-prompt-router/anthropic.claude:1";
/// assert_eq!(parse_arn(arn), Some(("us-east-1", "anthropic.claude:1")));
/// assert_eq!(parse_arn("amazon.nova-lite-v1:0"), None);
/// ```
pub fn parse_arn(arn: &str) -> Option<(&str, &str)> {
    let rest = arn.strip_prefix("arn:aws:bedrock:")?;
    let mut parts = rest.splitn(3, ':');
    let (region, _account, resource) = (parts.next()?, parts.next()?, parts.next()?);
    let name = resource
        .strip_prefix("default-prompt-router/")
        .or_else(|| resource.strip_prefix("prompt-router/"))?;
    (!region.is_empty() && !name.is_empty()).then_some((region, name))
}

/// The configured model (and its inference profile, if any) behind an invoked model id as
/// Bedrock reports it: a model or inference-profile ARN, or a bare id.
///
/// ```
/// use laneway::{plan::prompt_router::configured_model, Config, config::ProfileScope};
/// let c = Config::default();
/// let id = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-haiku-4-5-20251001-v1:0";
/// assert_eq!(configured_model(&c, id), Some(("anthropic.claude-haiku-4-5-20251001-v1:0", Some(ProfileScope::Us))));
/// assert_eq!(configured_model(&c, "arn:aws:bedrock:us-east-1::foundation-model/unknown-model"), None);
/// ```
pub fn configured_model<'c>(
    config: &'c Config,
    invoked: &str,
) -> Option<(&'c str, Option<ProfileScope>)> {
    let id = invoked.rsplit('/').next().unwrap_or(invoked);
    let (profile, bare) = match id.split_once('.') {
        Some((p, rest)) => match ProfileScope::from_prefix(p) {
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
