//! The core's layers, checked from its source: each top-level module may use only the modules
//! listed for it here (the picture in ARCHITECTURE.md), so that no two modules import each
//! other, directly or through others.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each module and what it may use, lowest layer first.
const LAYERS: &[(&str, &[&str])] = &[
    ("types", &[]),
    ("wire", &["types"]),
    ("failpoint", &[]),
    ("time", &[]),
    // The book's chapters as doc comments, for doctests only: it uses nothing.
    ("book", &[]),
    ("classifier", &[]),
    ("config", &["types"]),
    ("cost", &["types", "config"]),
    ("plan", &["types", "config", "classifier", "cost", "time"]),
    ("backend", &["types", "config", "wire"]),
    ("telemetry", &["types", "config", "time"]),
    ("batch", &["types", "config"]),
    ("state", &["types", "config", "plan", "telemetry", "time"]),
    // Advice from recorded traffic: a trace's summary priced as each change would serve it.
    ("advice", &["types", "config", "cost", "telemetry"]),
    (
        "execute",
        &[
            "types",
            "config",
            "cost",
            "plan",
            "backend",
            "telemetry",
            "batch",
            "state",
            "failpoint",
            "time",
        ],
    ),
    // The router's faces: `Router` and its builder, the bindings' `LazyStream`, the batch
    // lane's methods, the metrics endpoint.
    (
        "client",
        &[
            "advice",
            "types",
            "config",
            "cost",
            "plan",
            "backend",
            "telemetry",
            "batch",
            "state",
            "execute",
            "failpoint",
            "time",
        ],
    ),
    (
        "surface",
        &["types", "config", "execute", "client", "batch", "wire"],
    ),
];

/// The names the crate root re-exports (`pub use module::{A, B};` in lib.rs), each with the
/// top-level module it comes from.
fn root_exports(lib: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for statement in lib.split(';') {
        let Some(path) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let module: String = path
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '_')
            .collect();
        let names = path.rsplit("::").next().unwrap_or("");
        for name in names.trim_matches(|c| c == '{' || c == '}').split(',') {
            let name = name.trim();
            if name.starts_with(|c: char| c.is_ascii_uppercase()) {
                out.insert(name.to_string(), module.clone());
            }
        }
    }
    out
}

/// The modules a file's code uses through `crate::` (comments left out): `crate::<module>`
/// paths, and names the root re-exports (`crate::Router` is the `client` module's), which
/// code inside the crate does not use: it names a type by its module (reported in `through_root`).
fn uses(
    text: &str,
    exports: &BTreeMap<String, String>,
    through_root: &mut Vec<String>,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let first: Vec<String> = if let Some(group) = rest.strip_prefix('{') {
                group
                    .split('}')
                    .next()
                    .unwrap_or("")
                    .split(',')
                    .map(|item| item.trim().split("::").next().unwrap_or("").to_string())
                    .collect()
            } else {
                vec![
                    rest.chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect(),
                ]
            };
            for name in first {
                if name.starts_with(|c: char| c.is_ascii_uppercase()) {
                    through_root.push(name.clone());
                    if let Some(module) = exports.get(&name) {
                        out.insert(module.clone());
                    }
                } else if !name.is_empty() {
                    out.insert(name);
                }
            }
        }
    }
    out
}

fn files(path: &Path) -> Vec<std::path::PathBuf> {
    if path.is_dir() {
        let mut all = Vec::new();
        for e in std::fs::read_dir(path).unwrap() {
            all.extend(files(&e.unwrap().path()));
        }
        all
    } else {
        vec![path.to_path_buf()]
    }
}

#[test]
fn modules_use_only_the_layers_below_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let exports = root_exports(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let known: BTreeSet<&str> = LAYERS.iter().map(|(m, _)| *m).collect();
    let mut graph: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut through_root = Vec::new();
    for (module, allowed) in LAYERS {
        let dir = src.join(module);
        let path = if dir.is_dir() {
            dir
        } else {
            src.join(format!("{module}.rs"))
        };
        assert!(path.exists(), "{module} not found at {}", path.display());
        let mut used = BTreeSet::new();
        for f in files(&path) {
            let mut here = Vec::new();
            used.extend(uses(
                &std::fs::read_to_string(&f).unwrap(),
                &exports,
                &mut here,
            ));
            through_root.extend(
                here.into_iter()
                    .map(|n| format!("crate::{n} in {}", f.display())),
            );
        }
        used.retain(|m| m != module && known.contains(m.as_str()));
        let extra: Vec<_> = used
            .iter()
            .filter(|m| !allowed.contains(&m.as_str()))
            .collect();
        assert!(
            extra.is_empty(),
            "{module} uses {extra:?}, outside its layer (allowed: {allowed:?})"
        );
        graph.insert(module, used);
    }
    assert!(
        through_root.is_empty(),
        "code inside the crate names a type by its module, not through the crate root: {through_root:#?}"
    );
    // Every module of the crate is placed in a layer.
    for e in std::fs::read_dir(&src).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().replace(".rs", "");
        assert!(
            name == "lib" || known.contains(name.as_str()),
            "module {name} has no layer in this test (and in ARCHITECTURE.md)"
        );
    }
    // No cycles: a topological order exists.
    let mut done: BTreeSet<&str> = BTreeSet::new();
    while done.len() < graph.len() {
        let ready: Vec<&str> = graph
            .iter()
            .filter(|(m, deps)| {
                !done.contains(*m) && deps.iter().all(|d| done.contains(d.as_str()))
            })
            .map(|(m, _)| *m)
            .collect();
        assert!(
            !ready.is_empty(),
            "a cycle among {:?}",
            graph
                .keys()
                .filter(|m| !done.contains(*m))
                .collect::<Vec<_>>()
        );
        done.extend(ready);
    }
}

/// Where a provider's name or an AWS error code may be read: the backends (which turn their
/// services' answers into kinds and facts), the configuration (which says what each model
/// can do), the types that define the names, and the wire layer (the AWS-shaped and
/// OpenAI-shaped answers Laneway itself serves).
const PROVIDER_HOMES: &[&str] = &["backend/", "config/", "types/", "wire/", "surface/"];

/// Files outside those homes that still name a provider, each with why. The list is exact: a
/// file that no longer needs its exception fails the test until it is taken off.
const PROVIDER_EXCEPTIONS: &[(&str, &str)] = &[(
    "client/mod.rs",
    "the router's builder registers each built-in provider's backend",
)];

/// The provider names and AWS error codes in a file's code: comments, doc comments and its
/// `#[cfg(test)]` module left out.
fn provider_mentions(text: &str) -> Vec<String> {
    let names = [
        "Provider::Bedrock",
        "Provider::Sagemaker",
        "is_bedrock()",
        "Exception\"",
        "\"UnknownOperation\"",
    ];
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let code = line.split("//").next().unwrap_or("");
        out.extend(
            names
                .iter()
                .filter(|n| code.contains(*n))
                .map(|n| format!("{n} in `{}`", code.trim())),
        );
    }
    out
}

#[test]
fn provider_names_and_aws_codes_stay_with_their_backends() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut excepted_used = BTreeSet::new();
    let mut stray = Vec::new();
    for f in files(&src) {
        let rel = f
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if PROVIDER_HOMES.iter().any(|h| rel.starts_with(h)) {
            continue;
        }
        let found = provider_mentions(&std::fs::read_to_string(&f).unwrap());
        if found.is_empty() {
            continue;
        }
        if PROVIDER_EXCEPTIONS.iter().any(|(e, _)| *e == rel) {
            excepted_used.insert(rel);
        } else {
            stray.extend(found.into_iter().map(|m| format!("{rel}: {m}")));
        }
    }
    assert!(
        stray.is_empty(),
        "generic code asks the model's configuration or the backend what it can do, never \
         a provider's name or an AWS error code:\n{}",
        stray.join("\n")
    );
    let stale: Vec<_> = PROVIDER_EXCEPTIONS
        .iter()
        .filter(|(e, _)| !excepted_used.contains(*e))
        .collect();
    assert!(
        stale.is_empty(),
        "these no longer name a provider: take them off PROVIDER_EXCEPTIONS: {stale:?}"
    );
}
