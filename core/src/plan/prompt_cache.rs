//! Prompt-cache checkpoints: the caller's own checkpoints are checked against the model's rules
//! here, so that a request Bedrock would refuse with a 400 is refused before it is sent.

use crate::config::ModelConfig;
use crate::error::{Error, Result};
use crate::plan::Reason;
use crate::request::{CacheTtl, GenerateRequest, Tool};

/// Bedrock accepts at most this many checkpoints in one request.
pub const MAX_CHECKPOINTS: usize = 4;

/// Checks the request's checkpoints: caching supported, at most four, tool checkpoints only
/// where the model caches tools, TTLs it offers, and TTLs non-increasing in prompt order.
pub fn check_pinned(
    request: &GenerateRequest,
    model_id: &str,
    model: &ModelConfig,
    reasons: &mut Vec<Reason>,
) -> Result<()> {
    let points = request.pinned_cache_points();
    if points.is_empty() {
        return Ok(());
    }
    let rules = model.prompt_cache.as_ref().ok_or_else(|| {
        Error::invalid(
            "cache_point",
            format!("{model_id} does not support prompt caching"),
        )
    })?;
    if points.len() > MAX_CHECKPOINTS {
        return Err(Error::invalid(
            "cache_point",
            format!(
                "{} checkpoints in one request; Bedrock allows at most {MAX_CHECKPOINTS}",
                points.len()
            ),
        ));
    }
    if !rules.tools
        && request
            .tools
            .iter()
            .any(|t| matches!(t, Tool::CachePoint(_)))
    {
        return Err(Error::invalid(
            "tools",
            format!("{model_id} does not cache tool definitions"),
        ));
    }
    let ttls: Vec<CacheTtl> = points
        .iter()
        .map(|p| p.ttl.unwrap_or(CacheTtl::FiveMinutes))
        .collect();
    if let Some(t) = ttls.iter().find(|t| !rules.ttls.contains(t)) {
        return Err(Error::invalid(
            "cache_point.ttl",
            format!("{model_id} does not offer the {t:?} cache TTL"),
        ));
    }
    if ttls.windows(2).any(|w| w[0] < w[1]) {
        return Err(Error::invalid(
            "cache_point.ttl",
            "TTLs must not increase in prompt order (tools, system, messages): put 1h checkpoints before 5m ones",
        ));
    }
    reasons.push(Reason::CachePointsPinned {
        count: points.len(),
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::request::{CachePoint, SystemBlock};

    fn check(req: &GenerateRequest, model: &str) -> Result<()> {
        let c = Config::default();
        check_pinned(req, model, &c.models[model], &mut Vec::new())
    }

    #[test]
    fn rules_are_enforced() {
        let sonnet = "anthropic.claude-sonnet-4-5-20250929-v1:0";
        let mut req = GenerateRequest::user("x");
        for _ in 0..5 {
            req.system
                .push(SystemBlock::CachePoint(CachePoint::default()));
        }
        assert!(check(&req, sonnet)
            .unwrap_err()
            .to_string()
            .contains("at most 4"));

        let mut req = GenerateRequest::user("x");
        req.system.push(SystemBlock::CachePoint(CachePoint {
            ttl: Some(CacheTtl::FiveMinutes),
        }));
        req.messages[0]
            .content
            .push(crate::ContentBlock::CachePoint(CachePoint {
                ttl: Some(CacheTtl::OneHour),
            }));
        assert!(check(&req, sonnet)
            .unwrap_err()
            .to_string()
            .contains("must not increase"));

        let mut req = GenerateRequest::user("x");
        req.tools.push(Tool::CachePoint(CachePoint::default()));
        assert!(check(&req, "amazon.nova-lite-v1:0")
            .unwrap_err()
            .to_string()
            .contains("tool definitions"));
        assert!(check(&req, sonnet).is_ok());
    }
}
