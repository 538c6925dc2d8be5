//! `laneway check` and `laneway plan` on a user's own configuration.

use std::process::{Command, Output};

fn laneway(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_laneway"))
        .args(args)
        .output()
        .expect("the laneway binary runs")
}

fn write(tag: &str, text: &str) -> String {
    let p = std::env::temp_dir().join(format!("laneway-config-{tag}-{}.toml", std::process::id()));
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

const MINE: &str = r#"
[models."amazon.nova-lite-v1:0"]
quota = { tokens_per_minute = 400000, profile_tokens_per_minute = 800000 }
application_profiles = [{ arn = "arn:aws:bedrock:us-west-2:123456789012:application-inference-profile/team-a" }]
"#;

#[test]
fn check_prints_each_models_tiers_targets_prices_and_quotas() {
    let path = write("ok", MINE);
    let out = laneway(&["check", "--config", &path, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let lite = report["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "amazon.nova-lite-v1:0")
        .unwrap();
    assert_eq!(lite["quota"]["tokens_per_minute"], 400000);
    assert_eq!(
        lite["tiers"],
        serde_json::json!(["priority", "standard", "flex"])
    );
    assert_eq!(
        lite["targets"],
        serde_json::json!([{ "region": "us-west-2", "id": "arn:aws:bedrock:us-west-2:123456789012:application-inference-profile/team-a" }])
    );
    assert!(lite["price"]["input_per_1k"].as_f64().unwrap() > 0.0);
    let text = laneway(&["check", "--config", &path]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("valid") && text.contains("quota"), "{text}");
}

#[test]
fn check_names_what_is_wrong() {
    let path = write(
        "bad",
        "[models.\"amazon.nova-lite-v1:0\"]\napplication_profiles = [{ arn = \"arn:aws:bedrock:us-east-1:1:foundation-model/x\" }]\n",
    );
    let out = laneway(&["check", "--config", &path]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("models.\"amazon.nova-lite-v1:0\".application_profiles[0].arn"),
        "{err}"
    );
    let missing = laneway(&["check", "--config", "/no/such/laneway.toml"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/no/such/laneway.toml"));
}

#[test]
fn plan_shows_the_attempts_and_every_reason_without_sending() {
    let path = write("plan", MINE);
    let out = laneway(&[
        "plan",
        "--config",
        &path,
        "--model",
        "anthropic.claude-sonnet-4-5-20250929-v1:0",
        "--slo-class",
        "interactive",
        "--max-tokens",
        "200",
        "--residency",
        "eu",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("eu.anthropic.claude-sonnet-4-5-20250929-v1:0 in eu-west-1"),
        "{text}"
    );
    assert!(text.contains("tier priority"), "{text}");
    assert!(text.contains("outside the allowed residency"), "{text}");
    let json = laneway(&["plan", "--config", &path, "--family", "nova", "--json"]);
    let plan: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(!plan["attempts"].as_array().unwrap().is_empty());
    assert!(!plan["reasons"].as_array().unwrap().is_empty());
    let bad = laneway(&["plan", "--tier", "platinum"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--tier \"platinum\""));
}

#[test]
fn check_shows_a_models_end_of_life() {
    let path = write(
        "ended",
        "[models.\"amazon.nova-lite-v1:0\"]\nend_of_life = \"2026-09-14\"\n",
    );
    let out = laneway(&["check", "--config", &path, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let lite = report["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "amazon.nova-lite-v1:0")
        .unwrap();
    assert_eq!(lite["end_of_life"], "2026-09-14");
    let bad = write(
        "bad-day",
        "[models.\"amazon.nova-lite-v1:0\"]\nend_of_life = \"14 Sep 2026\"\n",
    );
    let out = laneway(&["check", "--config", &bad]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("end_of_life") && stderr.contains("YYYY-MM-DD"),
        "{stderr}"
    );
}
