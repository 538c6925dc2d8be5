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
    (
        "client",
        &[
            "types",
            "config",
            "plan",
            "backend",
            "telemetry",
            "state",
            "execute",
            "failpoint",
        ],
    ),
    (
        "batch_run",
        &[
            "types", "config", "cost", "plan", "backend", "batch", "execute", "client", "time",
        ],
    ),
    (
        "surface",
        &["types", "config", "execute", "client", "batch", "wire"],
    ),
];

/// The `crate::<module>` paths in a file's code (comments left out).
fn uses(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
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
    let known: BTreeSet<&str> = LAYERS.iter().map(|(m, _)| *m).collect();
    let mut graph: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
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
            used.extend(uses(&std::fs::read_to_string(&f).unwrap()));
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
