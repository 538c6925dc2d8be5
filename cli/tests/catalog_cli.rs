//! `laneway catalog prices`: a hand-written sample in the AWS Price List offer format (no offer
//! file can be downloaded here) read into price rows that price calls as the list says.

use std::process::{Command, Output};

use laneway::cost::{Served, cost_of_call};
use laneway::{Config, ProfileScope, ServiceTier, Usage};

fn laneway(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_laneway"))
        .args(args)
        .output()
        .expect("the laneway binary runs")
}

const FM: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/offer-bedrock-foundation-models.sample.json"
);
const NATIVE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/offer-bedrock.sample.json"
);

fn rows_config() -> (Config, String) {
    let out = std::env::temp_dir().join(format!("laneway-prices-{}.toml", std::process::id()));
    let run = laneway(&[
        "catalog",
        "prices",
        "--from",
        FM,
        "--from",
        NATIVE,
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&run.stderr).to_string();
    assert!(run.status.success(), "{stderr}");
    let text = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    (
        Config::from_toml_str(&text).unwrap(),
        format!("{stderr}\n{text}"),
    )
}

fn cost(config: &Config, model: &str, usage: &Usage, served: Served<'_>) -> f64 {
    cost_of_call(config.models[model].price(), &config.pricing, usage, served)
}

#[test]
fn an_offer_file_prices_each_region_scope_tier_ttl_and_band_as_listed() {
    let (config, said) = rows_config();
    // What was skipped and left out is said, not dropped.
    assert!(said.contains("other usage types skipped"), "{said}");
    assert!(said.contains("Claude Instant (100K)"), "{said}");
    assert!(said.contains("me-central-1"), "{said}");
    let sonnet = "anthropic.claude-sonnet-4-6";
    let global = ProfileScope::Global;
    let us = config.profile_scope("us");
    let in_us = |profile| Served {
        region: Some("us-east-1"),
        tier: Some(ServiceTier::STANDARD),
        profile,
    };
    // 100K tokens of a kind (below the long-context band), priced at a tenth of the per-1M price.
    let million = |kind: &str| match kind {
        "input" => Usage {
            input_tokens: 100_000,
            ..Usage::default()
        },
        "output" => Usage {
            output_tokens: 100_000,
            ..Usage::default()
        },
        "write_1h" => Usage {
            cache_write_tokens: 100_000,
            cache_write_1h_tokens: 100_000,
            ..Usage::default()
        },
        "write" => Usage {
            cache_write_tokens: 100_000,
            ..Usage::default()
        },
        _ => Usage {
            cache_read_tokens: 100_000,
            ..Usage::default()
        },
    };
    let near = |a: f64, per_million: f64| (a * 10.0 - per_million).abs() < 1e-9;
    // Global is the list's global price; a geographic profile the regional one, 10% above.
    let got = cost(&config, sonnet, &million("input"), in_us(Some(&global)));
    assert!(near(got, 3.00), "{got}");
    assert!(near(
        cost(&config, sonnet, &million("input"), in_us(us.as_ref())),
        3.30
    ));
    assert!(near(
        cost(&config, sonnet, &million("output"), in_us(None)),
        16.50
    ));
    assert!(near(
        cost(&config, sonnet, &million("read"), in_us(Some(&global))),
        0.30
    ));
    // A 1-hour cache write at its own price, not the 5-minute one.
    assert!(near(
        cost(&config, sonnet, &million("write"), in_us(Some(&global))),
        3.75
    ));
    assert!(near(
        cost(&config, sonnet, &million("write_1h"), in_us(Some(&global))),
        6.00
    ));
    // The region's own price: ap-southeast-2 lists Sonnet 10% above us-east-1.
    let sydney = Served {
        region: Some("ap-southeast-2"),
        ..in_us(Some(&global))
    };
    assert!(near(cost(&config, sonnet, &million("input"), sydney), 3.30));
    // Above 200K input tokens, the long-context band for the whole call.
    let long = Usage {
        input_tokens: 250_000,
        output_tokens: 1_000,
        ..Usage::default()
    };
    let expected = (250.0 * 0.0060 + 1.0 * 0.0225) * 10.0;
    assert!(near(
        cost(&config, sonnet, &long, in_us(Some(&global))),
        expected
    ));
    // Nova in the EU costs its EU price; its flex tier its own listed price.
    let nova = "amazon.nova-lite-v1:0";
    let eu = Served {
        region: Some("eu-west-1"),
        tier: Some(ServiceTier::STANDARD),
        profile: None,
    };
    assert!(near(cost(&config, nova, &million("input"), eu), 0.078));
    let eu_flex = Served {
        tier: Some(ServiceTier::FLEX),
        ..eu
    };
    assert!(near(cost(&config, nova, &million("input"), eu_flex), 0.039));
    // Nova's cache writes as listed (no surcharge: here, none at all).
    assert!(near(cost(&config, nova, &million("write"), eu), 0.0));
    // The snake_case spelling and a per-1M unit read alike (Opus 4.6).
    let opus = "anthropic.claude-opus-4-6-v1";
    assert!(near(
        cost(&config, opus, &million("input"), in_us(Some(&global))),
        5.00
    ));
    assert!(near(
        cost(&config, opus, &million("write_1h"), in_us(None)),
        11.00
    ));
    // A region the offer does not list keeps the base price and its multipliers.
    let tokyo = Served {
        region: Some("ap-northeast-1"),
        ..in_us(None)
    };
    let base = config.models[sonnet].price().input_per_1k * 1000.0;
    assert!(near(cost(&config, sonnet, &million("input"), tokyo), base));
}

#[test]
fn a_file_that_is_not_an_offer_is_named() {
    let bad =
        std::env::temp_dir().join(format!("laneway-not-an-offer-{}.json", std::process::id()));
    std::fs::write(&bad, "{\"products\": {}}").unwrap();
    let run = laneway(&["catalog", "prices", "--from", bad.to_str().unwrap()]);
    let _ = std::fs::remove_file(&bad);
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("offerCode"), "{stderr}");
}
