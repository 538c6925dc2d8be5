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
fn service_tiers_are_data_named_in_one_file() {
    // A tier is declared in configuration; the code names the built-in ones' words in one
    // table (types/tier.rs) and nowhere else lists them all.
    let builtin = [
        laneway::ServiceTier::PRIORITY,
        laneway::ServiceTier::STANDARD,
        laneway::ServiceTier::FLEX,
        laneway::ServiceTier::RESERVED,
    ];
    let words: Vec<String> = builtin.iter().map(|t| format!("\"{t}\"")).collect();
    assert_eq!(
        files_naming_all(&words),
        ["core/src/types/tier.rs"],
        "every tier's name spelled outside types/tier.rs"
    );
    let consts: Vec<String> = ["PRIORITY", "STANDARD", "FLEX", "RESERVED"]
        .iter()
        .map(|c| format!("ServiceTier::{c}"))
        .collect();
    assert!(
        files_naming_all(&consts).is_empty(),
        "a list of every built-in tier in code: a declared tier would be missing from it"
    );
    // The built-in configuration declares, prices and gives a prior to every built-in tier
    // (validation refuses one it does not), and declares more than the built-in ones.
    let declared = laneway::config::builtin_tiers();
    assert!(builtin.iter().all(|t| declared.contains(t)));
    assert!(
        declared.iter().any(|t| !builtin.contains(t)),
        "{declared:?}"
    );
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
    // A new metric: its `MetricId` and catalog entry, its series in a snapshot (the Prometheus
    // text and the observed values), its recording as calls happen (every meter's). No other
    // file of the workspace names a metric by id.
    assert_eq!(
        files_naming("MetricId::"),
        [
            "core/src/telemetry/catalog.rs",
            "core/src/telemetry/measure.rs",
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

/// The bindings' sources outside their tests (Python's package, Node's modules and
/// declarations), relative to the workspace, with their text.
fn binding_sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    for (dir, extensions) in [
        ("bindings-python/python/laneway", &["py", "pyi"][..]),
        ("bindings-node", &["js", "ts"][..]),
    ] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension()
                .is_some_and(|x| extensions.iter().any(|e| x == *e))
            {
                let name = format!("{dir}/{}", p.file_name().unwrap().to_string_lossy());
                out.push((name, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn error_kinds_are_written_in_the_files_of_their_claim() {
    // A new error kind: its `ErrorKind` variant (types/error.rs), its Python class and export
    // (errors.py, __init__.py); Node's `KINDS` and declarations are generated from the core's
    // schema (views.js, index.d.ts: `cargo run -p laneway-codegen`).
    let variants: Vec<String> = laneway::ErrorKind::ALL
        .iter()
        .map(|k| format!("ErrorKind::{k:?}"))
        .collect();
    assert_eq!(
        files_naming_all(&variants),
        ["core/src/types/error.rs"],
        "every error kind listed outside types/error.rs"
    );
    let classes: Vec<String> = laneway::surface::ErrorDetails::kinds()
        .into_iter()
        .map(laneway::surface::ErrorDetails::class_name)
        .collect();
    let naming_every_class: Vec<String> = binding_sources()
        .into_iter()
        .filter(|(_, text)| classes.iter().all(|c| text.contains(c.as_str())))
        .map(|(name, _)| name)
        .collect();
    assert_eq!(
        naming_every_class,
        [
            "bindings-node/index.d.ts",
            "bindings-node/views.js",
            "bindings-python/python/laneway/__init__.py",
            "bindings-python/python/laneway/errors.py",
        ],
        "the error classes listed outside their files (index.d.ts and views.js are generated)"
    );
}

/// The section of ARCHITECTURE.md that says where to add things.
fn where_to_add_things() -> String {
    let text = include_str!("../../../ARCHITECTURE.md");
    let start = text
        .find("## Where to add things")
        .expect("ARCHITECTURE.md has its section");
    let rest = &text[start + 3..];
    rest[..rest.find("\n## ").unwrap_or(rest.len())].to_string()
}

#[test]
fn where_to_add_things_names_files_and_tests_that_exist() {
    // Every file the section names exists (by its path from the workspace, the core, or its
    // src/), and every test it names by its file's path is a function of that file.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let section = where_to_add_things();
    let quoted: Vec<&str> = section.split('`').skip(1).step_by(2).collect();
    let mut missing = Vec::new();
    for q in &quoted {
        let q = q.trim_end_matches(')');
        let (file, test) = match q.split_once("::") {
            Some((f, t)) if f.contains('.') => (f, Some(t)),
            _ => (q, None),
        };
        let is_path = file.contains('/')
            && [".rs", ".py", ".pyi", ".js", ".ts", ".toml"]
                .iter()
                .any(|x| file.ends_with(x));
        if !is_path {
            continue;
        }
        let found = ["", "core/", "core/src/"]
            .iter()
            .map(|base| root.join(base).join(file))
            .find(|p| p.exists());
        match (found, test) {
            (None, _) => missing.push(format!("file {file}")),
            (Some(p), Some(test)) => {
                let text = std::fs::read_to_string(p).unwrap();
                if !text.contains(&format!("def {test}(")) && !text.contains(&format!("fn {test}("))
                {
                    missing.push(format!("test {test} in {file}"));
                }
            }
            (Some(_), None) => {}
        }
    }
    // Tests named by their module path in the core's property tests.
    for q in &quoted {
        if let Some(name) = q.strip_prefix("properties::naming::")
            && !include_str!("naming.rs").contains(&format!("fn {name}("))
        {
            missing.push(format!("test properties::naming::{name}"));
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's \"Where to add things\" names what does not exist: {missing:#?}"
    );
}
