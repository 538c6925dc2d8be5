//! `laneway bench` and `laneway recommend` end to end: the binary runs candidates against the
//! in-process emulator, writes its reports, and recommends from them.

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
    let d = std::env::temp_dir().join(format!("laneway-bench-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_grid_is_measured_reported_and_recommended_from() {
    let dir = workdir("grid");
    let out = dir.join("out");
    let o = laneway(&[
        "bench",
        "--model",
        "nova",
        "--model",
        "amazon.nova-pro-v1:0",
        "--tier",
        "standard",
        "--tier",
        "flex",
        "--concurrency",
        "8",
        "--requests",
        "24",
        "--time-scale",
        "0.05",
        "--out",
        out.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("| nova, flex, 8 |"), "{stdout}");

    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("bench.json")).unwrap()).unwrap();
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    for r in results {
        assert_eq!(r["ok"], 24, "{r}");
        assert!(
            r["latency_ms"]["p99"].as_f64().unwrap() >= r["latency_ms"]["p50"].as_f64().unwrap()
        );
        assert!(r["ttft_ms"]["samples"].as_u64().unwrap() == 24);
        let per_request = r["cost_per_request_usd"].as_f64().unwrap();
        let total = r["token_cost_usd"].as_f64().unwrap();
        assert!((per_request * 24.0 - total).abs() < 1e-9, "{r}");
        assert!((r["cost_per_million_usd"].as_f64().unwrap() - per_request * 1e6).abs() < 1e-6);
    }
    // Flex costs half of standard for the same model and tokens.
    let pro = |tier: &str| {
        results
            .iter()
            .find(|r| r["candidate"]["name"] == format!("amazon.nova-pro-v1:0, {tier}, 8"))
            .unwrap()
            .clone()
    };
    let (std_, flex) = (pro("standard"), pro("flex"));
    let per_token = |r: &serde_json::Value| {
        r["token_cost_usd"].as_f64().unwrap()
            / (r["input_tokens"].as_f64().unwrap() + r["output_tokens"].as_f64().unwrap())
    };
    assert!(per_token(&flex) < per_token(&std_) * 0.75, "{flex}\n{std_}");
    assert!(
        flex["served"]
            .as_object()
            .unwrap()
            .keys()
            .all(|k| k.contains("/ flex /")),
        "{flex}"
    );

    let svg = std::fs::read_to_string(out.join("frontier.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("nova, flex, 8"));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("frontier.svg") && md.contains("| amazon.nova-pro-v1:0, standard, 8 |"));

    let o = laneway(&[
        "recommend",
        "--from",
        out.to_str().unwrap(),
        "--constraint",
        "latency_p99<60s",
        "--constraint",
        "error_rate<1%",
    ]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("Recommended: nova, flex, 8"), "{stdout}");
    assert!(stdout.contains("costs more"), "{stdout}");

    let o = laneway(&[
        "recommend",
        "--from",
        out.to_str().unwrap(),
        "--constraint",
        "ttft_p99<1us",
    ]);
    let (stdout, _) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{stdout}");
    assert!(
        stdout.contains("No candidate meets every constraint")
            && stdout.contains("misses ttft_p99"),
        "{stdout}"
    );

    // The user's own evaluation outcomes: only Nova Pro answers these prompts well, so the
    // family (which routes most of them to Micro or Lite) falls below the quality floor and
    // the cheapest Pro candidate wins, with the reason shown.
    let evals = dir.join("evals.jsonl");
    let rows: String = (0..40)
        .map(|i| {
            serde_json::json!({
                "prompt": format!("Reconcile ledger {i} against the bank statement and list every mismatch"),
                "outcomes": {
                    "amazon.nova-micro-v1:0": false,
                    "amazon.nova-lite-v1:0": false,
                    "amazon.nova-pro-v1:0": true,
                },
            })
            .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(&evals, rows).unwrap();
    let o = laneway(&[
        "recommend",
        "--from",
        out.to_str().unwrap(),
        "--quality",
        evals.to_str().unwrap(),
        "--constraint",
        "quality>=0.9",
    ]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("Recommended: amazon.nova-pro-v1:0, flex, 8"),
        "{stdout}"
    );
    assert!(
        stdout.contains("amazon.nova-pro-v1:0, flex, 8 [quality 100.0%] (recommended)"),
        "{stdout}"
    );
    assert!(stdout.contains("misses quality >= 90.0%"), "{stdout}");
    let o = laneway(&[
        "recommend",
        "--from",
        out.to_str().unwrap(),
        "--constraint",
        "quality>=0.9",
    ]);
    assert!(!o.status.success());
    assert!(text(&o).1.contains("--quality"), "{:?}", text(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn self_hosted_endpoints_are_costed_by_instance_time() {
    let o = laneway(&[
        "bench",
        "--preset",
        "self-hosted",
        "--requests",
        "24",
        "--time-scale",
        "0.05",
        "--out",
    ]);
    assert!(!o.status.success(), "--out needs a value");
    let dir = workdir("selfhosted");
    let o = laneway(&[
        "bench",
        "--preset",
        "self-hosted",
        "--requests",
        "24",
        "--time-scale",
        "0.05",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("bench.json")).unwrap()).unwrap();
    for r in report["results"].as_array().unwrap() {
        let name = r["candidate"]["name"].as_str().unwrap();
        if name.starts_with("endpoint") {
            assert_eq!(r["cost_basis"], "instance hours", "{r}");
            let hourly = r["instance_hourly_usd"].as_f64().unwrap();
            let expected = if name.contains("12xlarge") {
                7.09
            } else {
                1.408
            };
            assert!((hourly - expected).abs() < 1e-9, "{r}");
            let per_request = hourly / 3600.0 / r["requests_per_second"].as_f64().unwrap();
            assert!((r["cost_per_request_usd"].as_f64().unwrap() - per_request).abs() < 1e-12);
        } else {
            assert_eq!(r["cost_basis"], "tokens", "{r}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_jsonl_workload_with_arrival_times_is_replayed() {
    let dir = workdir("jsonl");
    let file = dir.join("work.jsonl");
    let mut lines = String::new();
    for i in 0..12 {
        lines += &format!(
            "{{\"prompt\": \"question {i}\", \"at_ms\": {}, \"inference\": {{\"max_tokens\": 20}}, \"slo\": {{\"class\": \"interactive\", \"ttft_target\": 2.0}}}}\n",
            i * 50
        );
    }
    std::fs::write(&file, lines).unwrap();
    let o = laneway(&[
        "bench",
        "--workload",
        file.to_str().unwrap(),
        "--model",
        "amazon.nova-lite-v1:0",
        "--region",
        "us-west-2",
        "--time-scale",
        "0.1",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("bench.json")).unwrap()).unwrap();
    let r = &report["results"][0];
    assert_eq!(r["ok"], 12, "{r}");
    // Arrivals spread over 550 ms of scenario time: the run cannot be shorter.
    assert!(r["duration_s"].as_f64().unwrap() >= 0.55, "{r}");
    assert!(
        r["served"]
            .as_object()
            .unwrap()
            .keys()
            .all(|k| k.ends_with("/ us-west-2")),
        "{r}"
    );
    assert!(r["ttft_slo_met"].as_f64().is_some());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_bench_arguments_are_named() {
    for (args, needle) in [
        (vec!["bench"], "no candidates"),
        (vec!["bench", "--tier", "flex"], "--model"),
        (vec!["bench", "--model", "gpt-9"], "gpt-9"),
        (vec!["bench", "--model", "nova", "--tier", "turbo"], "turbo"),
        (
            vec!["bench", "--model", "nova", "--region", "mars-1"],
            "mars-1",
        ),
        (
            vec!["bench", "--model", "nova", "--workload", "nope"],
            "nope",
        ),
        (
            vec!["bench", "--model", "nova", "--time-scale", "0"],
            "time-scale",
        ),
        (
            vec!["recommend", "--from", "/nonexistent/bench.json"],
            "/nonexistent",
        ),
        (
            vec!["recommend", "--model", "nova", "--constraint", "ttft<3"],
            "ttft",
        ),
    ] {
        let o = laneway(&args);
        let (stdout, stderr) = text(&o);
        assert!(!o.status.success(), "{args:?} succeeded: {stdout}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}

/// `--metrics-addr` serves each candidate's router while it runs, its series labelled with the
/// candidate's name.
#[test]
fn the_bench_serves_each_candidates_metrics_while_it_runs() {
    use std::io::{BufRead as _, Read as _, Write as _};
    let mut child = Command::new(env!("CARGO_BIN_EXE_laneway"))
        .args([
            "bench",
            "--model",
            "nova",
            "--model",
            "amazon.nova-pro-v1:0",
        ])
        .args(["--requests", "6", "--time-scale", "0.05"])
        .args(["--metrics-addr", "127.0.0.1:0", "--metrics-linger", "60"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the laneway binary runs");
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.strip_prefix("metrics: http://")
                .and_then(|u| u.strip_suffix("/metrics"))
                .map(str::to_string)
        })
        .expect("the bench printed where its metrics are");
    let scrape = || {
        let mut s = std::net::TcpStream::connect(&addr).ok()?;
        s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").ok()?;
        let mut body = String::new();
        s.read_to_string(&mut body).ok()?;
        Some(body)
    };
    // Every candidate measured: the last one's router is served while the bench lingers.
    let measured = std::io::BufReader::new(child.stderr.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .any(|l| l.contains("every candidate measured"));
    assert!(measured, "the bench said it measured every candidate");
    let body = scrape().expect("the endpoint answers while the bench lingers");
    let last = "laneway_bench_candidate=\"amazon.nova-pro-v1:0";
    let done: f64 = body
        .lines()
        .filter(|l| l.starts_with("laneway_requests_total{") && l.contains(last))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(done, 6.0, "the last candidate's calls:\n{body}");
    child.kill().ok();
    child.wait().ok();
    assert!(
        body.starts_with("HTTP/1.0 200") || body.starts_with("HTTP/1.1 200"),
        "{body}"
    );
    assert!(
        body.lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty() && l.contains('{'))
            .all(|l| l.contains("laneway_bench_candidate=")),
        "every series names its candidate:\n{body}"
    );
}
