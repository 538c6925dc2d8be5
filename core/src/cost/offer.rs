//! Bedrock's prices from AWS's own price list: an offer file of the AWS Price List bulk API
//! (`AmazonBedrock`, `AmazonBedrockFoundationModels`, `AmazonBedrockService`; the JSON of
//! `https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/<offer>/current/index.json`) read
//! into the price rows of the configured models (`price.rows`).
//!
//! The format is AWS's (docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/reading-service-price-list-file-for-services.html):
//! `products` by SKU, each with `attributes` (`regionCode`; the model as `model`, or as
//! `servicename` "`<model> (Amazon Bedrock Edition)`" for models sold through AWS Marketplace;
//! `usagetype`, which says what is priced), and `terms.OnDemand` by SKU, each term's
//! `priceDimensions` with a `unit` and `pricePerUnit.USD`. What a `usagetype` prices is read
//! from its words, in each of the spellings the offers use (`InputTokenCount`,
//! `input_tokens`, `input-tokens`; `_Global`, `cross-region-global`; `_LCtx`, `long_ctx`,
//! `long-context`; `-flex`, `-priority`; the 1-hour cache write before the 5-minute one, whose
//! name it contains). Batch, provisioned and reserved throughput, model customization and
//! bedrock-mantle's own rates are not on-demand prices of a model's routed calls: they are
//! counted as skipped, with why. A model's name in the offer is matched to a configured model
//! exactly: its `price.list_name`, else its id without vendor, date and version
//! (`anthropic.claude-haiku-4-5-20251001-v1:0` is "Claude Haiku 4.5"), never by likeness, so
//! that a sibling's price is never taken.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::config::{Config, LongContextBand, PriceRow, PriceScope};
use crate::types::{Error, Result, ServiceTier};

/// What a price of the offer is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TokenKind {
    /// Input tokens neither read from nor written to the cache.
    Input,
    /// Output tokens.
    Output,
    /// Cache reads.
    CacheRead,
    /// Cache writes with the 5-minute TTL.
    CacheWrite,
    /// Cache writes with the 1-hour TTL.
    CacheWrite1h,
}

/// One on-demand token price of the offer.
#[derive(Debug, Clone, PartialEq)]
pub struct OfferLine {
    /// The model, as the offer names it ("Claude Sonnet 4.6", "Nova Pro").
    pub model: String,
    /// The region it is the price in (the region a call is sent to).
    pub region: String,
    /// Whether it is the global profile's price (else in-Region and geographic profiles').
    pub global: bool,
    /// The tier it prices.
    pub tier: ServiceTier,
    /// What it prices.
    pub kind: TokenKind,
    /// Whether it is the long-context band's price.
    pub long_context: bool,
    /// US dollars per 1K tokens.
    pub per_1k: f64,
}

/// An offer file, read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Offer {
    /// Its `offerCode` (`AmazonBedrockFoundationModels`, ...).
    pub offer_code: String,
    /// Its `version`.
    pub version: String,
    /// Its `publicationDate`.
    pub publication_date: String,
    /// Its on-demand token prices.
    pub lines: Vec<OfferLine>,
    /// The usage types it has that are not on-demand token prices of a model, each with why.
    pub skipped: Vec<(String, String)>,
}

/// Reads an offer file's JSON. An error names what is missing or malformed; a product this
/// reader does not price is counted in `skipped`, never dropped silently.
///
/// ```
/// let json = r#"{
///   "formatVersion": "v1.0", "offerCode": "AmazonBedrockFoundationModels",
///   "version": "20261201000000", "publicationDate": "2026-12-01T00:00:00Z",
///   "products": { "SKU1": { "sku": "SKU1", "attributes": {
///       "regionCode": "us-east-1", "servicename": "Claude Sonnet 4.6 (Amazon Bedrock Edition)",
///       "usagetype": "USE1-MP:USE1_InputTokenCount_Global-Units" } } },
///   "terms": { "OnDemand": { "SKU1": { "SKU1.JRTCKXETXF": { "priceDimensions": {
///       "SKU1.JRTCKXETXF.6YS6EN2CT7": { "unit": "Units",
///         "description": "AWS Marketplace software usage|us-east-1|Million Input Tokens Global",
///         "pricePerUnit": { "USD": "3.0000000000" } } } } } } }
/// }"#;
/// let offer = laneway::cost::offer::read_offer(json).unwrap();
/// let line = &offer.lines[0];
/// assert_eq!((line.model.as_str(), line.global), ("Claude Sonnet 4.6", true));
/// assert!((line.per_1k - 0.003).abs() < 1e-12);
/// ```
pub fn read_offer(json: &str) -> Result<Offer> {
    let doc: Value = serde_json::from_str(json)
        .map_err(|e| Error::invalid("offer", format!("not an offer file's JSON: {e}")))?;
    let field = |key: &str| -> Result<String> {
        doc.get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| Error::invalid(key, format!("the offer file has no {key:?}")))
    };
    let mut offer = Offer {
        offer_code: field("offerCode")?,
        version: field("version")?,
        publication_date: field("publicationDate").unwrap_or_default(),
        ..Offer::default()
    };
    let products = doc
        .get("products")
        .and_then(Value::as_object)
        .ok_or_else(|| Error::invalid("products", "the offer file has no products"))?;
    let on_demand = doc.pointer("/terms/OnDemand").and_then(Value::as_object);
    for (sku, product) in products {
        let attrs = &product["attributes"];
        let text = |k: &str| attrs.get(k).and_then(Value::as_str).unwrap_or("");
        let usage_type = text("usagetype").to_string();
        let line = classify(text).and_then(|(kind, global, tier, long_context)| {
            let model = model_name(text).ok_or("no model or servicename")?;
            let region = Some(text("regionCode"))
                .filter(|r| !r.is_empty())
                .ok_or("no regionCode")?;
            let per_1k = on_demand
                .and_then(|t| t.get(sku))
                .and_then(per_1k_of)
                .ok_or("no on-demand price in a unit of tokens")?;
            Ok(OfferLine {
                model,
                region: region.to_string(),
                global,
                tier,
                kind,
                long_context,
                per_1k,
            })
        });
        match line {
            Ok(line) => offer.lines.push(line),
            Err(why) => offer.skipped.push((usage_type, why.to_string())),
        }
    }
    offer.lines.sort_by(|a, b| {
        (
            &a.model,
            &a.region,
            a.global,
            a.tier,
            a.long_context,
            a.kind,
        )
            .cmp(&(
                &b.model,
                &b.region,
                b.global,
                b.tier,
                b.long_context,
                b.kind,
            ))
    });
    offer.skipped.sort();
    Ok(offer)
}

/// What a product prices, from its usage type and attributes: the token kind, whether it is
/// the global profile's, its tier and whether it is the long-context band's; else why it is
/// not a price this reader takes.
fn classify<'a>(
    text: impl Fn(&str) -> &'a str,
) -> std::result::Result<(TokenKind, bool, ServiceTier, bool), &'static str> {
    let usage = text("usagetype").to_ascii_lowercase();
    // The words of a usage type, however it is spelled: `InputTokenCount`, `input_tokens`
    // and `input-tokens` all read `input token`.
    let words = spaced(&usage_type_words(text("usagetype")));
    let has = |w: &str| words.contains(&format!(" {w} "));
    if usage.is_empty() {
        return Err("no usagetype");
    }
    if has("batch") {
        return Err("batch inference (priced by [pricing] batch)");
    }
    if has("mantle") {
        return Err("bedrock-mantle's own rate");
    }
    if [
        "reserved",
        "provisioned",
        "tpm",
        "customization",
        "training",
        "storage",
    ]
    .iter()
    .any(|w| has(w))
    {
        return Err("not on-demand inference");
    }
    let cache = has("cache");
    let kind = if cache && has("write") && (has("1h") || (has("1") && has("hour"))) {
        TokenKind::CacheWrite1h
    } else if cache && has("write") && (has("30m") || has("30")) {
        return Err("a cache write TTL Laneway does not set (30 minutes)");
    } else if cache && has("write") {
        TokenKind::CacheWrite
    } else if cache && has("read") {
        TokenKind::CacheRead
    } else if has("input") {
        TokenKind::Input
    } else if has("output") {
        TokenKind::Output
    } else {
        return Err("not a token price");
    };
    let global = has("global") || text("service_tier").contains("global");
    // A tier is named by its word (`-flex`, `-priority`, `-ultrafast`): any tier declared in
    // this process, so a tier added in configuration is read from the price list too.
    let tier = ServiceTier::known()
        .into_iter()
        .filter(|t| *t != ServiceTier::STANDARD)
        .find(|t| has(t.as_str()))
        .unwrap_or(ServiceTier::STANDARD);
    let long_context = has("lctx") || (has("long") && (has("ctx") || has("context")));
    Ok((kind, global, tier, long_context))
}

/// A usage type's words, lowercase: split at `-`, `_`, `:`, `.` and spaces, between a
/// lowercase letter and an uppercase one (`InputTokenCount`: `input token count`) and between
/// a letter and a digit (`Write1h`: `write 1h`); a run of capitals stays whole (`LCtx` reads
/// `lctx`).
fn usage_type_words(usage_type: &str) -> Vec<String> {
    let mut words = Vec::new();
    for part in usage_type.split(['-', '_', ':', '.', ' ']) {
        let mut word = String::new();
        let mut previous: Option<char> = None;
        for c in part.chars() {
            let boundary = previous.is_some_and(|p| {
                (p.is_ascii_lowercase() && c.is_ascii_uppercase())
                    || (p.is_ascii_alphabetic() && c.is_ascii_digit())
            });
            if boundary && !word.is_empty() {
                words.push(std::mem::take(&mut word).to_ascii_lowercase());
            }
            previous = Some(c);
            word.push(c);
        }
        if !word.is_empty() {
            words.push(word.to_ascii_lowercase());
        }
    }
    words
}

fn spaced(words: &[String]) -> String {
    format!(" {} ", words.join(" "))
}

/// The model a product prices, as the offer names it.
fn model_name<'a>(text: impl Fn(&str) -> &'a str) -> Option<String> {
    let model = text("model");
    let name = if model.is_empty() {
        text("servicename")
            .trim_end_matches("(Amazon Bedrock Edition)")
            .trim()
    } else {
        model.trim()
    };
    (!name.is_empty() && name != "Amazon Bedrock").then(|| name.to_string())
}

/// A term's price per 1K tokens: its first dimension starting at zero, its unit read as
/// tokens (`1K tokens`, `1M tokens`, `Tokens`, or `Units` whose description says million or
/// thousand).
fn per_1k_of(terms: &Value) -> Option<f64> {
    let term = terms.as_object()?.values().next()?;
    let dimensions = term.get("priceDimensions")?.as_object()?;
    let dimension = dimensions.values().find(|d| {
        d.get("beginRange")
            .and_then(Value::as_str)
            .is_none_or(|b| b == "0")
    })?;
    let usd: f64 = dimension
        .pointer("/pricePerUnit/USD")?
        .as_str()?
        .parse()
        .ok()?;
    if !(usd.is_finite() && usd >= 0.0) {
        return None;
    }
    let unit = dimension["unit"]
        .as_str()
        .unwrap_or("")
        .to_ascii_lowercase();
    let description = dimension["description"]
        .as_str()
        .unwrap_or("")
        .to_ascii_lowercase();
    let tokens_per_unit = match unit.as_str() {
        "1k tokens" => 1_000.0,
        "1m tokens" => 1_000_000.0,
        "tokens" | "token" => 1.0,
        "units" | "unit" if description.contains("million") => 1_000_000.0,
        "units" | "unit" if description.contains("thousand") || description.contains("1k") => {
            1_000.0
        }
        _ => return None,
    };
    Some(usd * 1_000.0 / tokens_per_unit)
}

/// A model's id as the offers name models: without its vendor, date and version
/// (`anthropic.claude-haiku-4-5-20251001-v1:0`: `claude-haiku-4-5`), normalized.
fn id_as_listed(id: &str) -> String {
    let bare = id.split_once('.').map_or(id, |(_, rest)| rest);
    let mut parts: Vec<&str> = bare.split('-').collect();
    while let Some(last) = parts.last() {
        let version = last.strip_prefix('v').unwrap_or(last);
        let is_version = version
            .split(':')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            && (last.starts_with('v') || last.contains(':'));
        let is_date = last.len() == 8 && last.bytes().all(|b| b.is_ascii_digit());
        if parts.len() > 1 && (is_version || is_date) {
            parts.pop();
        } else {
            break;
        }
    }
    normalized(&parts.join("-"))
}

/// A name lowercased, every run of other characters than letters and digits one `-`.
fn normalized(name: &str) -> String {
    name.to_ascii_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// The price rows an offer gives the configured models, and what it could not place.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceRows {
    /// Each configured model's rows, by its id.
    pub rows: BTreeMap<String, Vec<PriceRow>>,
    /// The offer's models no configured model matched.
    pub unmatched: Vec<String>,
    /// Prices left out, each with why: rows without an input or output price, and regions
    /// the configuration does not serve the model in.
    pub incomplete: Vec<String>,
}

/// The rows of `offer` for `config`'s models: per model, region, scope (global, or in-Region
/// and geographic) and tier, its input, output and cache prices and its long-context band
/// (above the model's own `price.long_context` threshold, else `long_context_above` input
/// tokens: the offers do not say where a band starts); rows whose prices are the same in
/// several regions made one.
pub fn price_rows(offer: &Offer, config: &Config, long_context_above: u32) -> PriceRows {
    let mut by_name: BTreeMap<String, &str> = BTreeMap::new();
    for (id, m) in &config.models {
        let listed = m
            .price()
            .list_name
            .as_deref()
            .map_or_else(|| id_as_listed(id), normalized);
        by_name.insert(listed, id);
    }
    type Key = (String, String, bool, ServiceTier);
    let mut groups: BTreeMap<Key, Vec<&OfferLine>> = BTreeMap::new();
    let mut out = PriceRows::default();
    for line in &offer.lines {
        match by_name.get(&normalized(&line.model)) {
            Some(id) => groups
                .entry((id.to_string(), line.region.clone(), line.global, line.tier))
                .or_default()
                .push(line),
            None => {
                if !out.unmatched.contains(&line.model) {
                    out.unmatched.push(line.model.clone());
                }
            }
        }
    }
    // Per model: rows by region, then those equal but for the region made one.
    let mut per_model: BTreeMap<String, Vec<PriceRow>> = BTreeMap::new();
    for ((id, region, global, tier), lines) in groups {
        let serves = config
            .models
            .get(&id)
            .is_none_or(|m| m.regions().is_empty() || m.regions().contains(&region));
        if !serves {
            out.incomplete.push(format!(
                "{id} in {region}: a region the configuration does not serve it in"
            ));
            continue;
        }
        let price = |kind: TokenKind, long: bool| {
            lines
                .iter()
                .find(|l| l.kind == kind && l.long_context == long)
                .map(|l| l.per_1k)
        };
        let (Some(input), Some(output)) = (
            price(TokenKind::Input, false),
            price(TokenKind::Output, false),
        ) else {
            out.incomplete.push(format!(
                "{id} in {region}{}{}: no input or output price",
                if global { " (global)" } else { "" },
                if tier == ServiceTier::STANDARD {
                    String::new()
                } else {
                    format!(" at {tier}")
                },
            ));
            continue;
        };
        let threshold = config
            .models
            .get(&id)
            .and_then(|m| m.price().long_context)
            .map_or(long_context_above, |b| b.above_input_tokens);
        let long_context = match (
            price(TokenKind::Input, true),
            price(TokenKind::Output, true),
        ) {
            (Some(input_per_1k), Some(output_per_1k)) => Some(LongContextBand {
                above_input_tokens: threshold,
                input_per_1k,
                output_per_1k,
                cache_read_per_1k: price(TokenKind::CacheRead, true),
                cache_write_per_1k: price(TokenKind::CacheWrite, true),
                cache_write_1h_per_1k: price(TokenKind::CacheWrite1h, true),
            }),
            _ => None,
        };
        let row = PriceRow {
            regions: vec![region],
            scopes: if global {
                vec![PriceScope::Global]
            } else {
                vec![PriceScope::InRegion, PriceScope::Geographic]
            },
            tier: (tier != ServiceTier::STANDARD).then_some(tier),
            input_per_1k: input,
            output_per_1k: output,
            cache_read_per_1k: price(TokenKind::CacheRead, false),
            cache_write_per_1k: price(TokenKind::CacheWrite, false),
            cache_write_1h_per_1k: price(TokenKind::CacheWrite1h, false),
            long_context,
        };
        let rows = per_model.entry(id).or_default();
        match rows.iter_mut().find(|r| same_but_regions(r, &row)) {
            Some(same) => same.regions.extend(row.regions),
            None => rows.push(row),
        }
    }
    out.rows = per_model;
    out.unmatched.sort();
    out
}

/// Whether two rows say the same prices at the same scopes and tier.
fn same_but_regions(a: &PriceRow, b: &PriceRow) -> bool {
    PriceRow {
        regions: Vec::new(),
        ..a.clone()
    } == PriceRow {
        regions: Vec::new(),
        ..b.clone()
    }
}

/// The rows as configuration TOML: `[[models."id".price.rows]]` tables, headed by where they
/// came from, to add to a configuration file (they replace the built-in rows of each model
/// they name).
pub fn rows_toml(offers: &[&Offer], rows: &PriceRows) -> String {
    let mut out = String::from(
        "# Bedrock prices from AWS's price list, written by `laneway catalog prices`.\n",
    );
    for o in offers {
        out.push_str(&format!(
            "# Offer {} version {} (published {}).\n",
            o.offer_code, o.version, o.publication_date
        ));
    }
    for (id, model_rows) in &rows.rows {
        #[derive(serde::Serialize)]
        struct Rows<'a> {
            rows: &'a [PriceRow],
        }
        let mut price = toml::Table::new();
        price.insert(
            "price".into(),
            toml::Value::try_from(Rows { rows: model_rows })
                .unwrap_or(toml::Value::Table(toml::Table::new())),
        );
        let mut model = toml::Table::new();
        model.insert(id.clone(), toml::Value::Table(price));
        let mut models = toml::Table::new();
        models.insert("models".into(), toml::Value::Table(model));
        out.push('\n');
        out.push_str(&toml::to_string(&models).unwrap_or_default());
    }
    if !rows.unmatched.is_empty() {
        out.push_str(
            "\n# In the offer, matching no configured model (set a model's `price.list_name`):\n",
        );
        for name in &rows.unmatched {
            out.push_str(&format!("#   {name}\n"));
        }
    }
    if !rows.incomplete.is_empty() {
        out.push_str("\n# Left out:\n");
        for what in &rows.incomplete {
            out.push_str(&format!("#   {what}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_types_are_read_in_every_spelling() {
        let read = |u: &str| {
            let attrs = serde_json::json!({ "usagetype": u });
            classify(|k: &str| attrs.get(k).and_then(Value::as_str).unwrap_or(""))
        };
        use TokenKind::*;
        let s = ServiceTier::STANDARD;
        assert_eq!(
            read("USE1-MP:USE1_InputTokenCount-Units"),
            Ok((Input, false, s, false))
        );
        assert_eq!(
            read("USE1-MP:USE1_InputTokenCount_Global-Units"),
            Ok((Input, true, s, false))
        );
        assert_eq!(
            read("USE1-MP:USE1_CacheWrite1hInputTokenCount-Units"),
            Ok((CacheWrite1h, false, s, false))
        );
        assert_eq!(
            read("USE1-MP:USE1_CacheWriteInputTokenCount_Global-Units"),
            Ok((CacheWrite, true, s, false))
        );
        assert_eq!(
            read("USE1-MP:USE1_CacheReadInputTokenCount-Units"),
            Ok((CacheRead, false, s, false))
        );
        assert_eq!(
            read("USE1-MP:USE1_InputTokenCount_LCtx_Global-Units"),
            Ok((Input, true, s, true))
        );
        assert_eq!(
            read("USE1-MP:USE1_output_tokens_global_standard-Units"),
            Ok((Output, true, s, false))
        );
        assert_eq!(
            read("USE1-MP:USE1_cache_write_tokens_1h_standard-Units"),
            Ok((CacheWrite1h, false, s, false))
        );
        assert_eq!(
            read("USE1-NovaPro-cache-read-input-token-count"),
            Ok((CacheRead, false, s, false))
        );
        assert_eq!(
            read("USE1-Nova2.0Lite-input-tokens-flex"),
            Ok((Input, false, ServiceTier::FLEX, false))
        );
        // A tier the configuration declares (the built-in one declares ultrafast) is read by
        // its word too.
        let ultrafast = crate::config::builtin_tiers()
            .into_iter()
            .find(|t| t.as_str() == "ultrafast")
            .unwrap();
        assert_eq!(
            read("USE1-MP:USE1_output_tokens_global_ultrafast-Units"),
            Ok((Output, true, ultrafast, false))
        );
        assert_eq!(
            read("USE1-Claude4Sonnet-input-tokens-long-context-cross-region-global"),
            Ok((Input, true, s, true))
        );
        assert_eq!(
            read("USE1-NovaPro-cache-write-input-token-count-1-hour"),
            Ok((CacheWrite1h, false, s, false))
        );
        assert!(read("USE1-NovaMicro-input-tokens-batch").is_err());
        assert!(read("USE1-MP:USE1_InputTokenCount_Global_Batch-Units").is_err());
        assert!(read("USE1-openai.gpt-oss-120b-mantle-input-tokens-standard").is_err());
        assert!(read("USE1-MP:USE1_Reserved_1Month_InputTPM_Geo-Units").is_err());
        assert!(read("USE1-MP:USE1_cache_write_tokens_30m_standard-Units").is_err());
    }

    #[test]
    fn ids_are_matched_to_listed_names_exactly() {
        assert_eq!(
            id_as_listed("anthropic.claude-haiku-4-5-20251001-v1:0"),
            normalized("Claude Haiku 4.5")
        );
        assert_eq!(
            id_as_listed("anthropic.claude-opus-4-6-v1"),
            normalized("Claude Opus 4.6")
        );
        assert_eq!(id_as_listed("amazon.nova-pro-v1:0"), normalized("Nova Pro"));
        assert_eq!(
            id_as_listed("openai.gpt-oss-120b-1:0"),
            normalized("gpt-oss-120b")
        );
        assert_eq!(
            id_as_listed("anthropic.claude-sonnet-4-6"),
            "claude-sonnet-4-6"
        );
        // A sibling is not the model: "Claude Opus 4" is not Opus 4.8.
        assert_ne!(
            id_as_listed("anthropic.claude-opus-4-8"),
            normalized("Claude Opus 4")
        );
    }
}
