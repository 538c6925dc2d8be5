//! Validation: every check of a loaded configuration, each error naming the field and the
//! bad value.

use super::{
    BTreeSet, BedrockModel, Config, Duration, Error, ModelConfig, Result, SagemakerModel,
    ServiceTier, VariantRouterConfig, parse_prompt_router_arn, redact_url,
};
use crate::types::Api;

impl Config {
    /// Checks that every reference resolves and every value is in range.
    pub fn validate(&self) -> Result<()> {
        self.validate_tiers()?;
        self.validate_regions()?;
        self.validate_routing()?;
        self.validate_batch_and_shared()?;
        self.validate_local_state()?;
        self.validate_record()?;
        self.validate_pricing()?;
        for (id, m) in &self.models {
            self.validate_model(id, m)?;
        }
        self.validate_families()?;
        self.validate_aliases()?;
        self.validate_defaults_and_endpoints()
    }

    /// Regions listed once each; geographies with regions.
    fn validate_regions(&self) -> Result<()> {
        if self.regions.is_empty() {
            return Err(Error::config("regions", "at least one region is needed"));
        }
        let mut seen = BTreeSet::new();
        for (i, r) in self.regions.iter().enumerate() {
            if !seen.insert(&r.name) {
                return Err(Error::config(
                    format!("regions[{i}].name"),
                    format!("region {:?} is listed twice", r.name),
                ));
            }
        }
        for (name, g) in &self.geographies {
            if g.regions.is_empty() {
                return Err(Error::config(
                    format!("geographies.{name}.regions"),
                    "a geography needs at least one region",
                ));
            }
        }
        Ok(())
    }

    /// The batch lane's record limits and the shared state's connection.
    fn validate_batch_and_shared(&self) -> Result<()> {
        if let Some(b) = &self.batch
            && (b.min_records == 0 || b.max_records_per_job < b.min_records)
        {
            return Err(Error::config(
                "batch.max_records_per_job",
                format!(
                    "{} records at most a job, at least {} (min_records): a job must be able to hold its minimum, and a minimum of at least 1",
                    b.max_records_per_job, b.min_records
                ),
            ));
        }
        if let Some(sh) = &self.shared {
            if !(sh.redis_url.starts_with("redis://")
                || sh.redis_url.starts_with("rediss://")
                || sh.redis_url.starts_with("redis+unix://")
                || sh.redis_url.starts_with("unix://"))
            {
                return Err(Error::config(
                    "shared.redis_url",
                    format!(
                        "{:?} is not a redis:// or rediss:// URL",
                        redact_url(&sh.redis_url)
                    ),
                ));
            }
            if sh.key_prefix.is_empty() || sh.key_prefix.contains(['{', '}']) {
                return Err(Error::config(
                    "shared.key_prefix",
                    "must be non-empty and without braces (they are Redis Cluster hash tags)",
                ));
            }
            if sh.replicas == 0 {
                return Err(Error::config("shared.replicas", "must be at least 1"));
            }
            if sh.timeout.is_zero() || sh.sync_interval.is_zero() {
                return Err(Error::config(
                    "shared.timeout",
                    "timeout and sync_interval must be > 0 ms",
                ));
            }
        }
        Ok(())
    }

    /// Every tier named anywhere is one this configuration declares under `[tiers]`: a name
    /// declared only by another configuration of the process is not this one's.
    fn validate_tiers(&self) -> Result<()> {
        for (class, tiers) in self.slo_tiers.classes() {
            if let Some(t) = tiers.iter().find(|t| !self.tiers.contains_key(t)) {
                return Err(undeclared(&format!("slo_tiers.{class}"), *t));
            }
        }
        let named = self
            .pricing
            .tiers
            .keys()
            .map(|t| ("pricing.tiers".to_string(), *t));
        let priors = self
            .routing
            .priors
            .tiers()
            .map(|(t, _)| ("routing.priors".to_string(), t));
        let models = self.models.iter().flat_map(|(id, m)| {
            let at = move |what: &str| format!("models.\"{id}\".{what}");
            let listed = m.tiers().iter().map(move |t| (at("tiers"), *t));
            let priced = m
                .price()
                .tiers
                .iter()
                .map(move |(t, _)| (at("price.tiers"), t));
            let rows = m
                .price()
                .rows
                .iter()
                .filter_map(move |r| r.tier.map(|t| (at("price.rows"), t)));
            let latency = m.latency().tiers.keys().chain(m.latency().openai.keys());
            let latency = latency.map(move |t| (at("latency"), *t));
            listed.chain(priced).chain(rows).chain(latency)
        });
        for (at, t) in named.chain(priors).chain(models) {
            if !self.tiers.contains_key(&t) {
                return Err(undeclared(&at, t));
            }
        }
        Ok(())
    }

    /// A price multiplier for every tier; every price a finite number >= 0.
    fn validate_pricing(&self) -> Result<()> {
        let p = &self.pricing;
        if !(0.0..1.0).contains(&p.discount) {
            return Err(Error::config(
                "pricing.discount",
                format!("must be a fraction in [0, 1), got {}", p.discount),
            ));
        }
        if let Some(t) = self.tiers.keys().find(|t| !p.tiers.contains_key(t)) {
            return Err(Error::config(
                format!("pricing.tiers.{t}"),
                "every declared service tier needs a price multiplier",
            ));
        }
        let tiers = p.tiers.iter().map(|(t, v)| (format!("tiers.{t}"), *v));
        let scopes = p.scopes.entries().map(|(k, v)| (format!("scopes.{k}"), v));
        for (name, v) in tiers.chain(scopes).chain([("batch".to_string(), p.batch)]) {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::config(
                    format!("pricing.{name}"),
                    format!("must be a finite number >= 0, got {v}"),
                ));
            }
        }
        for (t, v) in &p.instance_hourly {
            if !(v.is_finite() && *v >= 0.0) {
                return Err(Error::config(
                    format!("pricing.instance_hourly.{t:?}"),
                    format!("must be a finite number >= 0, got {v}"),
                ));
            }
        }
        Ok(())
    }

    /// Each family's variants, default variant, router and prompt router.
    fn validate_families(&self) -> Result<()> {
        for (name, f) in &self.families {
            let field = |k: &str| format!("families.{name}.{k}");
            if f.variants.is_empty() {
                return Err(Error::config(
                    field("variants"),
                    "must list at least one model",
                ));
            }
            for v in &f.variants {
                if !self.models.contains_key(v) {
                    return Err(Error::config(
                        field("variants"),
                        format!("unknown model {v:?}"),
                    ));
                }
            }
            if let Some(d) = &f.default_variant
                && !f.variants.contains(d)
            {
                return Err(Error::config(
                    field("default_variant"),
                    format!("{d:?} is not one of the family's variants"),
                ));
            }
            if self.models.contains_key(name) {
                return Err(Error::config(
                    format!("families.{name}"),
                    "a family and a model share this name",
                ));
            }
            if let Some(r) = &f.router {
                validate_router(r, f.variants.len(), &field("router"))?;
            }
            if let Some(arn) = &f.prompt_router {
                let Some((region, _)) = parse_prompt_router_arn(arn) else {
                    return Err(Error::config(
                        field("prompt_router"),
                        format!(
                            "{arn:?} is not a prompt router ARN (arn:aws:bedrock:REGION:ACCOUNT:default-prompt-router/NAME)"
                        ),
                    ));
                };
                if !self.is_configured_region(region) {
                    return Err(Error::config(
                        field("prompt_router"),
                        format!("region {region:?} of the ARN is not a configured region"),
                    ));
                }
                if f.router.is_some() {
                    return Err(Error::config(
                        field("prompt_router"),
                        "a family routes either with Laneway's classifier (router) or with a Bedrock prompt router, not both",
                    ));
                }
            }
        }
        Ok(())
    }

    /// The default model, and the AWS endpoint overrides.
    fn validate_defaults_and_endpoints(&self) -> Result<()> {
        if let Some(d) = &self.default_model
            && !self.families.contains_key(d)
            && !self.models.contains_key(d)
        {
            return Err(Error::config(
                "default_model",
                format!("{d:?} is neither a configured family nor a model"),
            ));
        }
        for (field, url) in [
            ("aws.endpoint_url", &self.aws.endpoint_url),
            ("aws.mantle_endpoint_url", &self.aws.mantle_endpoint_url),
        ] {
            if let Some(url) = url {
                let host = url
                    .strip_prefix("http://")
                    .or_else(|| url.strip_prefix("https://"))
                    .map(|rest| rest.split(['/', '?', '#']).next().unwrap_or_default());
                if host.is_none_or(str::is_empty) {
                    return Err(Error::config(
                        field,
                        format!("must be an http:// or https:// URL with a host, got {url:?}"),
                    ));
                }
            }
        }
        Ok(())
    }

    fn validate_routing(&self) -> Result<()> {
        let r = &self.routing;
        let number = |field: &str, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(Error::config(
                    field,
                    format!("must be a finite number >= 0, got {v}"),
                ))
            }
        };
        if r.max_attempts == 0 {
            return Err(Error::config(
                "routing.max_attempts",
                "must be at least 1, got 0",
            ));
        }
        if r.breaker.failure_threshold == 0 {
            return Err(Error::config(
                "routing.breaker.failure_threshold",
                "must be at least 1, got 0",
            ));
        }
        let o = &r.outlier;
        if o.consecutive_failures == 0 {
            return Err(Error::config(
                "routing.outlier.consecutive_failures",
                "must be at least 1, got 0",
            ));
        }
        if !(0.0..=1.0).contains(&o.max_ejected_share) {
            return Err(Error::config(
                "routing.outlier.max_ejected_share",
                format!("must be between 0 and 1, got {}", o.max_ejected_share),
            ));
        }
        if o.base_ejection.is_zero() || o.max_ejection < o.base_ejection {
            return Err(Error::config(
                "routing.outlier.max_ejection",
                "base_ejection must be longer than 0 ms and max_ejection at least as long",
            ));
        }
        if !(0.0..=1.0).contains(&r.hedge.standard_quantile) {
            return Err(Error::config(
                "routing.hedge.standard_quantile",
                format!("must be between 0 and 1, got {}", r.hedge.standard_quantile),
            ));
        }
        number("routing.budget.ratio", r.budget.ratio)?;
        number("routing.budget.min_per_second", r.budget.min_per_second)?;
        if r.budget.window.is_zero() {
            return Err(Error::config(
                "routing.budget.window",
                "must be longer than 0 ms",
            ));
        }
        if !(0.0..=1.0).contains(&r.hedge.quantile) {
            return Err(Error::config(
                "routing.hedge.quantile",
                format!("must be between 0 and 1, got {}", r.hedge.quantile),
            ));
        }
        if r.concurrency.initial_limit == 0 {
            return Err(Error::config(
                "routing.concurrency.initial_limit",
                "must be at least 1",
            ));
        }
        for (key, share) in [
            ("background_share", r.concurrency.background_share),
            ("spread_above", r.concurrency.spread_above),
        ] {
            if !(0.0..=1.0).contains(&share) {
                return Err(Error::config(
                    format!("routing.concurrency.{key}"),
                    format!("must be between 0 and 1, got {share}"),
                ));
            }
        }
        if !(r.overflow.max_price_ratio.is_finite() && r.overflow.max_price_ratio >= 1.0) {
            return Err(Error::config(
                "routing.overflow.max_price_ratio",
                format!(
                    "must be a finite number >= 1 (a stronger variant costs more), got {}",
                    r.overflow.max_price_ratio
                ),
            ));
        }
        self.validate_timeouts()?;
        self.validate_priors()?;
        if r.minute.is_zero() {
            return Err(Error::config("routing.minute", "must be longer than 0 ms"));
        }
        number("prompt_cache.margin", self.prompt_cache.margin)?;
        number(
            "prompt_cache.task_reuse_prior",
            self.prompt_cache.task_reuse_prior,
        )
    }

    /// `[local_state]`: a file to write, and periods above zero.
    fn validate_local_state(&self) -> Result<()> {
        let Some(l) = &self.local_state else {
            return Ok(());
        };
        if l.path.as_os_str().is_empty() {
            return Err(Error::config("local_state.path", "must name a file"));
        }
        for (field, d) in [("max_age", l.max_age), ("save_every", l.save_every)] {
            if d.is_zero() {
                return Err(Error::config(
                    format!("local_state.{field}"),
                    "must be longer than 0 ms",
                ));
            }
        }
        Ok(())
    }

    /// `[record]`: a file if any, a share from 0 to 1, room for a line, periods above zero.
    fn validate_record(&self) -> Result<()> {
        let Some(r) = &self.record else {
            return Ok(());
        };
        if r.path.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
            return Err(Error::config("record.path", "must name a file"));
        }
        if !(0.0..=1.0).contains(&r.sample) {
            return Err(Error::config(
                "record.sample",
                format!("must be from 0 to 1 (a share of calls), got {}", r.sample),
            ));
        }
        if r.max_bytes < 4096 {
            return Err(Error::config(
                "record.max_bytes",
                "must be at least 4096 bytes",
            ));
        }
        if r.queue == 0 {
            return Err(Error::config("record.queue", "must hold at least one line"));
        }
        if r.load_every.is_zero() {
            return Err(Error::config(
                "record.load_every",
                "must be longer than 0 ms",
            ));
        }
        Ok(())
    }

    /// Every tier's prior, and every model's own figures: times above zero, a tail no shorter
    /// than the median, a speed that is a finite number above zero.
    fn validate_priors(&self) -> Result<()> {
        let check = |at: &str, p: &super::PartialPrior| -> Result<()> {
            for (field, d) in [
                ("ttft", p.ttft),
                ("ttft_p99", p.ttft_p99),
                ("gap_p99", p.gap_p99),
            ] {
                if d.is_some_and(|d| d.is_zero()) {
                    return Err(Error::config(
                        format!("{at}.{field}"),
                        "must be longer than 0 ms",
                    ));
                }
            }
            if let (Some(p50), Some(p99)) = (p.ttft, p.ttft_p99)
                && p99 < p50
            {
                return Err(Error::config(
                    format!("{at}.ttft_p99"),
                    format!("must be at least ttft ({p50:?}), got {p99:?}"),
                ));
            }
            match p.tokens_per_second {
                Some(v) if !(v.is_finite() && v > 0.0) => Err(Error::config(
                    format!("{at}.tokens_per_second"),
                    format!("must be a finite number > 0, got {v}"),
                )),
                _ => Ok(()),
            }
        };
        let whole = |p: super::LatencyPrior| super::PartialPrior {
            ttft: Some(p.ttft),
            ttft_p99: Some(p.ttft_p99),
            gap_p99: Some(p.gap_p99),
            tokens_per_second: Some(p.tokens_per_second),
        };
        if let Some(t) = self.tiers.keys().find(|t| !self.routing.priors.has(**t)) {
            return Err(Error::config(
                format!("routing.priors.{t}"),
                "every declared service tier needs a prior (ttft, ttft_p99, gap_p99, tokens_per_second)",
            ));
        }
        for (tier, p) in self.routing.priors.tiers() {
            check(&format!("routing.priors.{}", tier.as_str()), &whole(*p))?;
        }
        for (id, m) in &self.models {
            let latency = m.latency();
            for (table, tiers) in [("tiers", &latency.tiers), ("openai", &latency.openai)] {
                for (tier, p) in tiers {
                    let at = format!("models.\"{id}\".latency.{table}.{}", tier.as_str());
                    check(&at, p)?;
                    // What it makes of its tier's, as calls will read it.
                    let api = match table {
                        "openai" => Api::OpenAiMantle,
                        _ => m.default_api(),
                    };
                    check(&at, &whole(self.routing.priors.of(m, Some(*tier), api)))?;
                }
            }
        }
        Ok(())
    }

    fn validate_timeouts(&self) -> Result<()> {
        let r = &self.routing;
        let t = &r.timeouts;
        let positive = |field: &str, d: Duration| {
            if d.is_zero() {
                Err(Error::config(field, "must be longer than 0 ms"))
            } else {
                Ok(())
            }
        };
        positive("routing.timeouts.connect", t.connect)?;
        for (class, c) in [
            ("interactive", &t.interactive),
            ("standard", &t.standard),
            ("background", &t.background),
            ("batch", &t.batch),
        ] {
            positive(
                &format!("routing.timeouts.{class}.first_token"),
                c.first_token,
            )?;
            positive(&format!("routing.timeouts.{class}.idle"), c.idle)?;
            positive(&format!("routing.timeouts.{class}.deadline"), c.deadline)?;
        }
        for (field, v) in [
            (
                "routing.timeouts.ttft_target_multiple",
                t.ttft_target_multiple,
            ),
            (
                "routing.timeouts.min_tokens_per_second",
                t.min_tokens_per_second,
            ),
            (
                "routing.timeouts.reasoning_tokens_per_second",
                t.reasoning_tokens_per_second,
            ),
            ("routing.timeouts.learned.factor", t.learned.factor),
            (
                "routing.timeouts.learned.prefill_tokens_per_second",
                t.learned.prefill_tokens_per_second,
            ),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::config(
                    field,
                    format!("must be a finite number > 0, got {v}"),
                ));
            }
        }
        let learned = &t.learned;
        if !(learned.quantile > 0.0 && learned.quantile <= 1.0) {
            return Err(Error::config(
                "routing.timeouts.learned.quantile",
                format!("must be in (0, 1], got {}", learned.quantile),
            ));
        }
        if learned.factor < 1.0 {
            return Err(Error::config(
                "routing.timeouts.learned.factor",
                format!("must be at least 1, got {}", learned.factor),
            ));
        }
        positive("routing.timeouts.learned.floor", learned.floor)?;
        if learned.min_samples == 0 {
            return Err(Error::config(
                "routing.timeouts.learned.min_samples",
                "must be at least 1",
            ));
        }
        if r.retry.max_backoff < r.retry.backoff {
            return Err(Error::config(
                "routing.retry.max_backoff",
                format!(
                    "must be at least routing.retry.backoff ({} ms), got {} ms",
                    r.retry.backoff.as_millis(),
                    r.retry.max_backoff.as_millis()
                ),
            ));
        }
        Ok(())
    }

    fn validate_model(&self, id: &str, m: &ModelConfig) -> Result<()> {
        let field = |k: &str| format!("models.\"{id}\".{k}");
        let price = m.price();
        for (k, v) in [
            ("input_per_1k", Some(price.input_per_1k)),
            ("output_per_1k", Some(price.output_per_1k)),
            ("cache_read_per_1k", price.cache_read_per_1k),
            ("cache_write_per_1k", price.cache_write_per_1k),
        ] {
            if let Some(v) = v
                && !(v.is_finite() && v >= 0.0)
            {
                return Err(Error::config(
                    field(&format!("price.{k}")),
                    format!("must be a finite number >= 0, got {v}"),
                ));
            }
        }
        for (i, row) in price.rows.iter().enumerate() {
            for (k, v) in row.prices() {
                if let Some(v) = v.filter(|v| !(v.is_finite() && *v >= 0.0)) {
                    return Err(Error::config(
                        field(&format!("price.rows[{i}].{k}")),
                        format!("must be a finite number >= 0, got {v}"),
                    ));
                }
            }
            if let Some(r) = row
                .regions
                .iter()
                .find(|r| !m.regions().is_empty() && !m.regions().contains(r))
            {
                return Err(Error::config(
                    field(&format!("price.rows[{i}].regions")),
                    format!("region {r:?} is not among the model's regions"),
                ));
            }
        }
        if let Some(r) = &price.reserved {
            for (k, v) in [
                ("input_per_1k_tpm_month", r.input_per_1k_tpm_month),
                ("output_per_1k_tpm_month", r.output_per_1k_tpm_month),
            ] {
                if !(v.is_finite() && v > 0.0) {
                    return Err(Error::config(
                        field(&format!("price.reserved.{k}")),
                        format!("must be a finite number > 0, got {v}"),
                    ));
                }
            }
        }
        if let Some(d) = price.discount.filter(|d| !(0.0..1.0).contains(d)) {
            return Err(Error::config(
                field("price.discount"),
                format!("must be a fraction in [0, 1), got {d}"),
            ));
        }
        let own = price.scopes.map(|s| s.entries()).into_iter().flatten();
        let own = own.map(|(k, v)| (format!("scopes.{k}"), Some(v))).chain(
            price
                .tiers
                .iter()
                .map(|(t, v)| (format!("tiers.{t}"), Some(v))),
        );
        for (k, v) in own {
            if let Some(v) = v.filter(|v| !(v.is_finite() && *v >= 0.0)) {
                return Err(Error::config(
                    field(&format!("price.{k}")),
                    format!("must be a finite number >= 0, got {v}"),
                ));
            }
        }
        match m {
            ModelConfig::Bedrock(b) => self.validate_bedrock(b, &field),
            ModelConfig::Sagemaker(s) => self.validate_sagemaker(s, &field),
            ModelConfig::Other(o) => {
                if o.regions.is_empty() {
                    return Err(Error::config(
                        field("regions"),
                        format!(
                            "a model of provider {:?} needs at least one region (any name)",
                            o.provider.as_str()
                        ),
                    ));
                }
                Ok(())
            }
        }
    }

    fn validate_bedrock(&self, m: &BedrockModel, field: &dyn Fn(&str) -> String) -> Result<()> {
        if let Some(day) = &m.end_of_life
            && !is_iso_day(day)
        {
            return Err(Error::config(
                field("end_of_life"),
                format!("must be a day as YYYY-MM-DD, got {day:?}"),
            ));
        }
        if m.output_burndown == 0 {
            return Err(Error::config(
                field("output_burndown"),
                "must be at least 1",
            ));
        }
        if m.quota.and_then(|q| q.max_concurrency) == Some(0) {
            return Err(Error::config(
                field("quota.max_concurrency"),
                "must be at least 1 (leave it out to learn it from throttles)",
            ));
        }
        if let Some(r) = &m.reasoning {
            r.validate()
                .map_err(|e| Error::config(field("reasoning"), e))?;
        }
        match &m.openai {
            Some(o) => o
                .validate(m.converse)
                .map_err(|e| Error::config(field("openai"), e))?,
            None if !m.converse => {
                return Err(Error::config(
                    field("converse"),
                    "`converse = false` needs `openai`: nothing else serves the model",
                ));
            }
            None => {}
        }
        if m.regions.is_empty() {
            return Err(Error::config(
                field("regions"),
                "a Bedrock model needs at least one region",
            ));
        }
        if let Some(r) = m.regions.iter().find(|r| !self.is_known_region(r)) {
            return Err(Error::config(
                field("regions"),
                format!("region {r:?} is neither under [[regions]] nor in a [geographies] entry"),
            ));
        }
        for (i, p) in m.profiles.iter().enumerate() {
            if let Some(g) = p.geography().filter(|g| !self.is_known_geography(g)) {
                return Err(Error::config(
                    field(&format!("profiles[{i}]")),
                    format!(
                        "{g:?} is not a configured geography (configured: {}; add it under [geographies])",
                        self.known_geographies()
                    ),
                ));
            }
        }
        if m.tiers.is_empty() {
            return Err(Error::config(
                field("tiers"),
                "must list at least one service tier",
            ));
        }
        if let Some(r) = m
            .in_region
            .iter()
            .flatten()
            .find(|r| !m.regions.contains(r))
        {
            return Err(Error::config(
                field("in_region"),
                format!("region {r:?} is not among the model's regions"),
            ));
        }
        if m.requires_profile && m.profiles.is_empty() {
            return Err(Error::config(
                field("requires_profile"),
                "is true but the model lists no profiles",
            ));
        }
        if m.reserved.is_some() && !m.tiers.contains(&ServiceTier::RESERVED) {
            return Err(Error::config(
                field("reserved"),
                "the model has a reservation but `reserved` is not among its tiers",
            ));
        }
        for (i, p) in m.application_profiles.iter().enumerate() {
            let at = field(&format!("application_profiles[{i}].arn"));
            match p.region() {
                None => {
                    return Err(Error::config(
                        at,
                        format!(
                            "{:?} is not an application inference profile ARN \
                             (arn:aws:bedrock:REGION:ACCOUNT:application-inference-profile/ID)",
                            p.arn
                        ),
                    ));
                }
                Some(r) if !self.is_configured_region(r) => {
                    return Err(Error::config(
                        at,
                        format!("region {r:?} is not among the configured regions"),
                    ));
                }
                Some(_) => {}
            }
        }
        if m.prompt_cache.as_ref().is_some_and(|c| c.ttls.is_empty()) {
            return Err(Error::config(
                field("prompt_cache.ttls"),
                "must list at least one TTL",
            ));
        }
        Ok(())
    }

    fn validate_sagemaker(&self, m: &SagemakerModel, field: &dyn Fn(&str) -> String) -> Result<()> {
        if m.endpoints.is_empty() {
            return Err(Error::config(
                field("endpoints"),
                "a SageMaker model needs at least one endpoint",
            ));
        }
        for (i, e) in m.endpoints.iter().enumerate() {
            let at = |k: &str| field(&format!("endpoints[{i}].{k}"));
            if e.name.is_empty() {
                return Err(Error::config(at("name"), "must not be empty"));
            }
            if !self.is_configured_region(&e.region) {
                return Err(Error::config(
                    at("region"),
                    format!("region {:?} is not among the configured regions", e.region),
                ));
            }
            if e.instance_count == 0 {
                return Err(Error::config(at("instance_count"), "must be at least 1"));
            }
            if let Some(t) = &e.instance_type
                && !self.pricing.instance_hourly.contains_key(t)
            {
                return Err(Error::config(
                    at("instance_type"),
                    format!("{t:?} has no price: add it under [pricing.instance_hourly]"),
                ));
            }
        }
        if let Some(f) = &m.fallback_family {
            let bedrock_family = self.families.get(f).is_some_and(|fam| {
                fam.variants
                    .iter()
                    .all(|v| matches!(self.models.get(v), Some(ModelConfig::Bedrock(_))))
            });
            if !bedrock_family {
                return Err(Error::config(
                    field("fallback_family"),
                    format!("{f:?} is not a configured family of Bedrock models"),
                ));
            }
        }
        Ok(())
    }
}

fn validate_router(r: &VariantRouterConfig, variants: usize, field: &str) -> Result<()> {
    let given = [
        r.threshold.is_some(),
        r.thresholds.is_some(),
        r.max_strong_share.is_some(),
    ]
    .iter()
    .filter(|g| **g)
    .count();
    if given > 1 {
        return Err(Error::config(
            field,
            "give at most one of threshold, thresholds and max_strong_share",
        ));
    }
    if variants < 2 {
        return Err(Error::config(
            field,
            "routing needs a family of two variants or more",
        ));
    }
    if let Some(t) = r
        .novelty_threshold
        .filter(|t| !(t.is_finite() && (0.0..=1.0).contains(t)))
    {
        return Err(Error::config(
            format!("{field}.novelty_threshold"),
            format!("{t} is outside 0..=1"),
        ));
    }
    if r.novelty_window == 0 {
        return Err(Error::config(
            format!("{field}.novelty_window"),
            "the window spans at least one prompt",
        ));
    }
    for (name, value, range) in [
        ("quality_loss_budget", r.quality_loss_budget, 0.0..=1.0),
        ("explore_share", r.explore_share, 0.0..=0.5),
    ] {
        if !(value.is_finite() && range.contains(&value)) {
            return Err(Error::config(
                format!("{field}.{name}"),
                format!("{value} is outside {}..={}", range.start(), range.end()),
            ));
        }
    }
    if r.feedback_half_life == 0 {
        return Err(Error::config(
            format!("{field}.feedback_half_life"),
            "the half-life spans at least one outcome",
        ));
    }
    let in_range = |t: f32| t.is_finite() && (-1.0..=1.0).contains(&t);
    if let Some(t) = r.threshold
        && !in_range(t)
    {
        return Err(Error::config(
            format!("{field}.threshold"),
            format!("{t} is outside -1..=1"),
        ));
    }
    if let Some(ts) = &r.thresholds {
        if ts.len() != variants - 1 {
            return Err(Error::config(
                format!("{field}.thresholds"),
                format!(
                    "{} thresholds for {} cheaper variants",
                    ts.len(),
                    variants - 1
                ),
            ));
        }
        if let Some(t) = ts.iter().find(|t| !in_range(**t)) {
            return Err(Error::config(
                format!("{field}.thresholds"),
                format!("{t} is outside -1..=1"),
            ));
        }
    }
    if let Some(s) = r.max_strong_share
        && !(0.0..=1.0).contains(&s)
    {
        return Err(Error::config(
            format!("{field}.max_strong_share"),
            format!("{s} is outside 0..=1"),
        ));
    }
    Ok(())
}

/// Whether `day` is a calendar day written `YYYY-MM-DD`.
fn is_iso_day(day: &str) -> bool {
    let parts: Vec<&str> = day.split('-').collect();
    let number = |p: &str, len: usize, max: u32| {
        p.len() == len
            && p.bytes().all(|b| b.is_ascii_digit())
            && p.parse::<u32>().is_ok_and(|n| (1..=max).contains(&n))
    };
    matches!(parts.as_slice(), [y, m, d] if number(y, 4, 9999) && number(m, 2, 12) && number(d, 2, 31))
}

/// The error for a tier named at `at` that the configuration does not declare.
fn undeclared(at: &str, tier: ServiceTier) -> Error {
    Error::config(
        at,
        format!("tier {tier} is not declared under [tiers] (declare it with [tiers.{tier}])"),
    )
}
