//! ARCHITECTURE.md's "Where to add things", checked from the source: the files a new service
//! tier, built-in provider, built-in policy or metric touches are the ones it names, because
//! nothing else lists them. (The Node declarations' `ServiceTier` type is the one other list, and
//! `bindings-node/test/schema.test.js` checks it against the core's names.)

use std::path::{Path, PathBuf};

/// The workspace's Rust sources outside tests: each file's code before its first
/// `#[cfg(test)]` (unit tests may name anything), comments and doc examples left out.
fn sources() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    for dir in [
        "core/src",
        "cli/src",
        "bindings-python/src",
        "bindings-node/src",
    ] {
        walk(&root.join(dir), &mut out);
    }
    out.into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let code = text
                .split("#[cfg(test)]")
                .next()
                .unwrap_or("")
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            (p, code)
        })
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The files (relative to the workspace) whose code names every one of `names`.
fn files_naming_all(names: &[String]) -> Vec<String> {
    sources()
        .into_iter()
        .filter(|(_, code)| names.iter().all(|n| code.contains(n.as_str())))
        .map(|(p, _)| {
            let s = p.to_string_lossy().replace('\\', "/");
            s[s.find("/../").map_or(0, |i| i + 4)..].to_string()
        })
        .collect()
}

#[test]
fn service_tiers_are_listed_in_one_file() {
    let variants: Vec<String> = laneway::ServiceTier::ALL
        .iter()
        .map(|t| format!("ServiceTier::{t:?}"))
        .collect();
    assert_eq!(
        files_naming_all(&variants),
        ["core/src/types/slo.rs"],
        "a list of every tier outside slo.rs: a new tier would have to be added there too"
    );
    let words: Vec<String> = laneway::ServiceTier::ALL
        .iter()
        .map(|t| format!("\"{}\"", t.as_str()))
        .collect();
    assert_eq!(
        files_naming_all(&words),
        ["core/src/types/slo.rs"],
        "every tier's name spelled outside slo.rs"
    );
    // The built-in configuration prices every tier: validation refuses one it does not.
    let defaults = include_str!("../../defaults.toml");
    for t in laneway::ServiceTier::ALL {
        assert!(
            defaults.contains(&format!("\n{} = ", t.as_str())),
            "defaults.toml prices {t:?} under [pricing.tiers]"
        );
    }
}

#[test]
fn built_in_providers_are_registered_in_one_place() {
    // Each built-in backend is made in `builtin_backends` (client/mod.rs); no other file of the
    // core constructs them.
    for backend in [
        "BedrockBackend::new(",
        "SagemakerBackend::new(",
        "OpenAiBackend::new(",
    ] {
        assert_eq!(
            files_naming_all(&[backend.to_string()]),
            ["core/src/client/mod.rs"],
            "{backend} outside client/mod.rs"
        );
    }
}

/// The files (relative to the workspace) whose code names `word` at all.
fn files_naming(word: &str) -> Vec<String> {
    let mut files = files_naming_all(&[word.to_string()]);
    files.sort_unstable();
    files
}

#[test]
fn metrics_are_named_in_the_three_files_of_their_claim() {
    // A new metric: its `MetricId` and catalog entry, its Prometheus series, its OpenTelemetry
    // recording. No other file of the workspace names a metric by id.
    assert_eq!(
        files_naming("MetricId"),
        [
            "core/src/telemetry/catalog.rs",
            "core/src/telemetry/otel.rs",
            "core/src/telemetry/prometheus.rs",
        ],
        "a metric named outside its three files: a new metric would have to be added there too"
    );
}

#[test]
fn built_in_policies_live_in_one_file() {
    // A new built-in policy: its type and its place in `Planner::new`, both in plan/policy.rs
    // (its logic may grow into a module of its own under plan/).
    assert_eq!(files_naming("Policy for "), ["core/src/plan/policy.rs"]);
    assert_eq!(
        files_naming("Arc::new(TierPolicy)"),
        ["core/src/plan/policy.rs"],
        "the built-in policies are put in order in Planner::new alone"
    );
}
