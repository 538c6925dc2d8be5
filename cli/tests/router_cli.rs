//! `laneway router train | eval | calibrate` on small files, and their errors.

use std::path::PathBuf;
use std::process::{Command, Output};

fn laneway(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_laneway"))
        .args(args)
        .output()
        .expect("the laneway binary runs")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn workdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("laneway-cli-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// 400 rows: arithmetic defeats the small variant, trivia does not.
fn write_data(dir: &std::path::Path) -> PathBuf {
    let mut rows = String::new();
    for i in 0..400 {
        let (prompt, small) = if i % 4 == 0 {
            (
                format!("Compute {i} * 37 + 12 / 4 and show the working"),
                false,
            )
        } else {
            (format!("Name the capital city of country number {i}"), true)
        };
        rows.push_str(
            &serde_json::json!({"prompt": prompt, "outcomes": {"small": small, "large": true}})
                .to_string(),
        );
        rows.push('\n');
    }
    let p = dir.join("evals.jsonl");
    std::fs::write(&p, rows).unwrap();
    p
}

#[test]
fn train_then_eval_and_calibrate_on_jsonl() {
    let dir = workdir("train");
    let data = write_data(&dir);
    let model = dir.join("model.lwc");
    let data_s = data.to_str().unwrap();
    let model_s = model.to_str().unwrap();
    let out = laneway(&[
        "router",
        "train",
        "--data",
        data_s,
        "--out",
        model_s,
        "--variants",
        "small,large",
        "--bits",
        "12",
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("APGR") && stdout.contains("oracle"),
        "{stdout}"
    );

    // Deterministic: the same command writes the same bytes.
    let again = dir.join("again.lwc");
    let out = laneway(&[
        "router",
        "train",
        "--data",
        data_s,
        "--out",
        again.to_str().unwrap(),
        "--variants",
        "small,large",
        "--bits",
        "12",
    ]);
    assert!(out.status.success());
    assert_eq!(
        std::fs::read(&model).unwrap(),
        std::fs::read(&again).unwrap()
    );

    let out = laneway(&[
        "router",
        "eval",
        "--data",
        data_s,
        "--model",
        model_s,
        "--variants",
        "small,large",
        "--json",
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("--json prints JSON");
    let all = &v["sections"][0];
    assert_eq!(all["name"], "all");
    let apgr = |name: &str| {
        all["routers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["router"] == name)
            .unwrap()["apgr"]
            .as_f64()
            .unwrap()
    };
    assert!(
        apgr("laneway") > 0.9,
        "a separable toy problem: {}",
        apgr("laneway")
    );
    assert!(apgr("laneway") > apgr("random"));

    let out = laneway(&[
        "router",
        "calibrate",
        "--data",
        data_s,
        "--model",
        model_s,
        "--variants",
        "small,large",
        "--max-strong-share",
        "0.3",
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("30.0% of calls") && stdout.contains("quality 1.000"),
        "{stdout}"
    );
    // No quality lost: exactly the quarter that needs the large variant goes to it.
    let out = laneway(&[
        "router",
        "calibrate",
        "--data",
        data_s,
        "--model",
        model_s,
        "--variants",
        "small,large",
        "--max-quality-loss",
        "0",
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("25.0% of calls"), "{stdout}");
}

#[test]
fn malformed_rows_and_corrupt_models_are_named() {
    let dir = workdir("errors");
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"prompt\": \"ok\", \"outcomes\": {\"a\": true, \"b\": false}}\n{\"prompt\": \"x\", \"outcomes\": {\"a\": \"yes\"}}\n").unwrap();
    let out = laneway(&[
        "router",
        "train",
        "--data",
        bad.to_str().unwrap(),
        "--out",
        dir.join("m.lwc").to_str().unwrap(),
    ]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("bad.jsonl, row 2") && stderr.contains("\"a\""),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");

    let data = write_data(&dir);
    let corrupt = dir.join("corrupt.lwc");
    std::fs::write(&corrupt, b"LANEWAYC\x01\x00garbage that is not a model").unwrap();
    let out = laneway(&[
        "router",
        "eval",
        "--data",
        data.to_str().unwrap(),
        "--model",
        corrupt.to_str().unwrap(),
    ]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("corrupt.lwc") && stderr.contains("checksum"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn eval_holds_each_source_out_in_turn() {
    let dir = workdir("loso");
    let write = |name: &str, weak: &str, strong: &str| {
        let mut rows = String::new();
        for i in 0..150 {
            let hard = i % 3 == 0;
            let prompt = if hard {
                format!("Compute {i} * 37 + 12 / 4 and show the working ({name})")
            } else {
                format!("Name the capital city of country number {i} ({name})")
            };
            rows.push_str(
                &serde_json::json!({"prompt": prompt, "outcomes": {weak: !hard, strong: true}})
                    .to_string(),
            );
            rows.push('\n');
        }
        let p = dir.join(format!("{name}.jsonl"));
        std::fs::write(&p, rows).unwrap();
        p.to_str().unwrap().to_string()
    };
    let a = write("quizzes", "mini-1", "max-1");
    let b = write("homework", "mini-2", "max-2");
    let out = laneway(&[
        "router",
        "eval",
        "--leave-one-source-out",
        "--steps",
        "60",
        "--bits",
        "10",
        "--data",
        &a,
        "--data",
        &b,
        "--json",
    ]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let names: Vec<&str> = v["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["quizzes", "homework", "in-distribution"]);
    let table = laneway(&[
        "router",
        "eval",
        "--leave-one-source-out",
        "--steps",
        "60",
        "--bits",
        "10",
        "--data",
        &a,
        "--data",
        &b,
    ]);
    let (stdout, _) = text(&table);
    assert!(
        stdout.contains("vs length") && stdout.contains("homework"),
        "{stdout}"
    );
    let one = laneway(&["router", "eval", "--leave-one-source-out", "--data", &a]);
    assert!(!one.status.success());
    assert!(
        text(&one).1.contains("at least two sources"),
        "{:?}",
        text(&one)
    );
}

#[test]
fn report_prints_a_shadow_report_from_a_metrics_file_and_names_a_bad_one() {
    let dir = workdir("report");
    let metrics = serde_json::json!({
        "lanes": [],
        "shadow": {"families": {"claude": {
            "calls": 4, "served_usd": 0.004, "would_usd": 0.003,
            "served": {"sonnet": 4},
            "would_choose": {"haiku": 2, "sonnet": 2},
            "cells": {"general.1": {"calls": 4, "served_usd": 0.004, "would_usd": 0.003,
                "would_choose": {"haiku": 2, "sonnet": 2}, "good": 3, "bad": 1}}
        }}}
    });
    let file = dir.join("metrics.json");
    std::fs::write(&file, metrics.to_string()).unwrap();
    let out = laneway(&["router", "report", file.to_str().unwrap()]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("family claude: 4 calls served by sonnet"),
        "{stdout}"
    );
    assert!(stdout.contains("(-25.0%)"), "{stdout}");
    assert!(stdout.contains("routing would choose haiku"), "{stdout}");
    assert!(stdout.contains("answered 3 of 4 well"), "{stdout}");
    assert!(stdout.contains("general.1"), "{stdout}");
    let json = laneway(&["router", "report", file.to_str().unwrap(), "--json"]);
    let parsed: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(parsed["families"]["claude"]["calls"], 4);

    std::fs::write(&file, "{\"shadow\": {\"families\": 3}}").unwrap();
    let out = laneway(&["router", "report", file.to_str().unwrap()]);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("metrics.json") && stderr.contains("shadow"),
        "{stderr}"
    );
}
