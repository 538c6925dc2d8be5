//! The Grafana dashboard and Prometheus alert rules in `observability/`, checked by a real
//! Prometheus (Debian's package; `scripts/test.sh` unpacks it into `target/tools/prometheus`):
//! a Prometheus scraping `laneway demo --metrics-addr` answers every panel's expression with
//! data, loads the rules, and has every series the rules name; `promtool test rules` passes on
//! series recorded from such a demo run, whose regional outage the rules must catch.
//!
//! `LANEWAY_RECORD_ALERT_SERIES=1 cargo test -p laneway-cli --test observability` records the
//! series again and rewrites `observability/prometheus/alerts.test.yml`.

use std::io::{BufRead as _, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// How often the test's Prometheus scrapes the demo: each sample becomes a minute of the
/// recorded series' time (`interval: 1m`), so that the rules' `for:` windows play out in
/// `promtool`'s time instead of being waited out.
const SCRAPE: &str = "250ms";

/// How long the whole check may take at most: the demo, the scrapes, the queries.
const LIMIT: Duration = Duration::from_secs(180);

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// `prometheus` and `promtool`: from `LANEWAY_PROMETHEUS_DIR`, the test command's unpacked
/// package, or `PATH`. `None` (the test says so and passes) unless the test command asked for
/// them with `LANEWAY_REQUIRE_PROMETHEUS=1`.
fn tools() -> Option<(PathBuf, PathBuf)> {
    let dirs = [
        std::env::var_os("LANEWAY_PROMETHEUS_DIR").map(PathBuf::from),
        Some(workspace().join("target/tools/prometheus/usr/bin")),
    ];
    let found = dirs
        .into_iter()
        .flatten()
        .map(|d| (d.join("prometheus"), d.join("promtool")))
        .find(|(p, t)| p.is_file() && t.is_file())
        .or_else(|| {
            let on_path = |n: &str| {
                Command::new(n)
                    .arg("--version")
                    .output()
                    .is_ok_and(|o| o.status.success())
            };
            (on_path("prometheus") && on_path("promtool"))
                .then(|| ("prometheus".into(), "promtool".into()))
        });
    if found.is_none() {
        assert!(
            std::env::var_os("LANEWAY_REQUIRE_PROMETHEUS").is_none(),
            "prometheus and promtool not found: scripts/test.sh unpacks Debian's package into target/tools/prometheus"
        );
        eprintln!("prometheus not installed: run scripts/test.sh for this check");
    }
    found
}

/// A free loopback port (bound, read and released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A GET over HTTP/1.0 (so the answer is never chunked): the status and the body.
fn get(addr: &str, path_and_query: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(s, "GET {path_and_query} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut raw = String::new();
    s.read_to_string(&mut raw)?;
    let status = raw
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = raw
        .split_once("\r\n\r\n")
        .map_or(String::new(), |(_, b)| b.to_string());
    Ok((status, body))
}

fn encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// A Prometheus HTTP API answer's `data`.
fn api(addr: &str, path: &str, params: &[(&str, &str)]) -> Value {
    let query: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect();
    let (status, body) = get(addr, &format!("{path}?{}", query.join("&"))).unwrap();
    let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(status, 200, "{path} {params:?}: {body}");
    assert_eq!(v["status"], "success", "{body}");
    v["data"].clone()
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

/// Every metric name a PromQL expression names: its `laneway_*` and `gen_ai_*` words, less
/// the label names of grouping clauses and matchers.
fn metric_names(expr: &str) -> Vec<String> {
    // Grouping clauses name labels only: drop them.
    let mut text = expr.to_string();
    for clause in ["by (", "without (", "on(", "on (", "ignoring ("] {
        while let Some(i) = text.find(clause) {
            let close = text[i..].find(')').map_or(text.len(), |j| i + j + 1);
            text.replace_range(i..close, " ");
        }
    }
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find(|c: char| c.is_ascii_alphabetic() || c == '_') {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(tail.len());
        let word = &tail[..end];
        let matcher = tail[end..].trim_start().starts_with(['=', '!']);
        if (word.starts_with("laneway_") || word.starts_with("gen_ai_")) && !matcher {
            out.push(word.to_string());
        }
        rest = &tail[end..];
    }
    out
}

/// The alert rules' expressions, read from the rules file (`expr:` lines and the block under
/// `expr: |`).
fn rule_exprs(rules: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = rules.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(e) = line.trim_start().strip_prefix("expr:") else {
            continue;
        };
        if e.trim() != "|" {
            out.push(e.trim().to_string());
            continue;
        }
        let mut block = String::new();
        while let Some(next) = lines.peek() {
            if next.trim().is_empty() || next.starts_with("          ") {
                block.push_str(lines.next().unwrap().trim());
                block.push(' ');
            } else {
                break;
            }
        }
        out.push(block);
    }
    out
}

/// The dashboard's panel expressions, with Grafana's variables as a test's Prometheus reads
/// them: every class and region, a rate window spanning the whole demo.
fn panel_exprs(dashboard: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for p in dashboard["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().into_iter().flatten() {
            let expr = t["expr"]
                .as_str()
                .unwrap()
                .replace("$__rate_interval", "5m")
                .replace("$class", ".*")
                .replace("$region", ".*");
            out.push((p["title"].as_str().unwrap().to_string(), expr));
        }
    }
    out
}

/// What one demo run gave: the Prometheus that scraped it, the last scrape's time (Unix
/// seconds), the test's own scrapes of it in order, and the processes that must live while
/// the Prometheus is queried.
struct Run {
    prometheus: String,
    first: f64,
    last: f64,
    scrapes: Vec<String>,
    _running: Vec<Killed>,
}

/// A demo run with a regional outage (and a Redis that is not there) scraped by a Prometheus
/// loaded with the rules, and by the test itself (each of its scrapes, however long it took
/// on a busy machine, is one sample of the recording).
fn demo_under_prometheus(prometheus: &Path, dir: &Path, time_scale: &str, recording: bool) -> Run {
    let placeholder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let demo_addr = placeholder.local_addr().unwrap().to_string();
    let prom_addr = format!("127.0.0.1:{}", free_port());
    let rules = workspace().join("observability/prometheus/alerts.yml");
    std::fs::write(
        dir.join("prometheus.yml"),
        format!(
            "global: {{scrape_interval: {SCRAPE}, scrape_timeout: {SCRAPE}, evaluation_interval: 1s}}\n\
             rule_files: ['{}']\n\
             scrape_configs: [{{job_name: laneway, static_configs: [{{targets: ['{demo_addr}']}}]}}]\n",
            rules.display()
        ),
    )
    .unwrap();
    let prom = Killed(
        Command::new(prometheus)
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!("--web.listen-address={prom_addr}"))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus runs"),
    );
    // Prometheus takes up its targets a few seconds after it starts: the demo starts once it
    // is scraping, so that its first scrapes see the lanes. Its first scrape attempt is the
    // event: the test listens at the demo's address until Prometheus connects, and reads
    // until Prometheus gives up on it (so Prometheus closes first and the port is free).
    let (scraped, first_scrape) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (mut conn, _) = placeholder.accept().unwrap();
        drop(placeholder);
        let _ = conn.read_to_end(&mut Vec::new());
        let _ = scraped.send(());
    });
    first_scrape
        .recv_timeout(LIMIT)
        .expect("prometheus never scraped");
    // No Redis listens on port 1: the shared state is degraded all along.
    std::fs::write(
        dir.join("shared.toml"),
        "[shared]\nredis_url = \"redis://127.0.0.1:1\"\n",
    )
    .unwrap();
    let mut demo = Command::new(env!("CARGO_BIN_EXE_laneway"))
        .args(["demo", "--time-scale", time_scale, "--metrics-linger", "4"])
        .args(["--metrics-addr", &demo_addr])
        .arg("--config")
        .arg(dir.join("shared.toml"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the laneway binary runs");
    let stdout = demo.stdout.take().unwrap();
    let demo = Killed(demo);
    // Recording only: the test's own scrapes, one per scrape interval until told to stop.
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let scraper = recording.then(|| {
        let addr = demo_addr.clone();
        let pace = Duration::from_millis(SCRAPE.trim_end_matches("ms").parse().unwrap());
        std::thread::spawn(move || {
            let mut scrapes = Vec::new();
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(pace) {
                if let Ok((200, body)) = get(&addr, "/metrics") {
                    scrapes.push(body);
                }
            }
            scrapes
        })
    });
    // The demo's metrics table is out once its calls are all counted; the linger that follows
    // gives the scrapes of the end state.
    let mut done = false;
    for line in std::io::BufReader::new(stdout).lines() {
        if line
            .unwrap()
            .contains("The same workload and faults without Laneway")
        {
            done = true;
            break;
        }
    }
    assert!(done, "the demo ended early");
    drop(stop);
    let scrapes = scraper.map(|s| s.join().unwrap()).unwrap_or_default();
    let ups = api(
        &prom_addr,
        "/api/v1/query",
        &[("query", "up{job=\"laneway\"}[10m]")],
    );
    let values = ups["result"][0]["values"].as_array().unwrap().clone();
    let served: Vec<f64> = values
        .iter()
        .filter(|v| v[1] == "1")
        .map(|v| v[0].as_f64().unwrap())
        .collect();
    assert!(served.len() > 20, "too few scrapes of the demo: {values:?}");
    Run {
        prometheus: prom_addr,
        first: served[0],
        last: *served.last().unwrap(),
        scrapes,
        _running: vec![demo, prom],
    }
}

#[test]
fn every_dashboard_panel_and_alert_rule_reads_series_the_demo_exports() {
    let Some((prometheus, _)) = tools() else {
        return;
    };
    let dir = tempdir();
    // Recording runs the demo in real time: its outage starts 1.5 s after the emulator, once
    // the router is serving and scraped, so the recording shows it begin.
    let recording = std::env::var_os("LANEWAY_RECORD_ALERT_SERIES").is_some();
    let time_scale = if recording { "1" } else { "0.25" };
    let run = demo_under_prometheus(&prometheus, &dir, time_scale, recording);
    let prom = run.prometheus.as_str();
    if recording {
        record(&run.scrapes);
    }

    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(workspace().join("observability/grafana/laneway.json")).unwrap(),
    )
    .unwrap();
    // Every metric a panel names is in the catalog (no misspelt name hides behind a panel's
    // `or vector(0)`).
    let catalog: Vec<String> = laneway::telemetry::catalog::CATALOG
        .iter()
        .flat_map(|m| {
            let n = m.prometheus_name();
            [format!("{n}_sum"), format!("{n}_count"), n]
        })
        .collect();
    for (title, expr) in panel_exprs(&dashboard) {
        for name in metric_names(&expr) {
            assert!(
                catalog.contains(&name),
                "{title}: {name} is not a Laneway metric"
            );
        }
    }
    // A panel has data when its expression gives a number at some step of the run, as a user
    // watching the demo would see it.
    let mut empty = Vec::new();
    let exprs = panel_exprs(&dashboard);
    assert!(exprs.len() >= 20, "{}", exprs.len());
    for (title, expr) in &exprs {
        let (start, end) = (format!("{}", run.first), format!("{}", run.last));
        let range = [
            ("query", expr.as_str()),
            ("start", &start),
            ("end", &end),
            ("step", "0.5"),
        ];
        let data = api(prom, "/api/v1/query_range", &range);
        let result = data["result"].as_array().unwrap();
        let numbers = result
            .iter()
            .flat_map(|r| r["values"].as_array().into_iter().flatten())
            .filter(|v| {
                v[1].as_str()
                    .is_some_and(|v| v.parse::<f64>().is_ok_and(f64::is_finite))
            })
            .count();
        if numbers == 0 {
            empty.push(format!("{title}: {expr} -> {result:?}"));
        }
    }
    assert!(
        empty.is_empty(),
        "panels without data:\n{}",
        empty.join("\n")
    );

    // The rules loaded and name Laneway's metrics; the recorded series are still exported.
    let groups = api(prom, "/api/v1/rules", &[]);
    let rules = groups["groups"][0]["rules"].as_array().unwrap();
    assert!(rules.len() >= 8);
    assert!(rules.iter().all(|r| r["health"] == "ok"), "{rules:?}");
    let names = api(prom, "/api/v1/label/__name__/values", &[]);
    let exported: Vec<&str> = names
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let text =
        std::fs::read_to_string(workspace().join("observability/prometheus/alerts.yml")).unwrap();
    let exprs = rule_exprs(&text);
    assert_eq!(exprs.len(), rules.len());
    for expr in exprs {
        for name in metric_names(&expr) {
            assert!(
                catalog.contains(&name),
                "{name} (in {expr}) is not a Laneway metric"
            );
        }
    }
    for name in metric_names(&recorded_file()) {
        assert!(
            exported.contains(&name.as_str()),
            "the recorded {name} is no longer exported: record again"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_alert_rules_catch_a_recorded_regional_outage_in_promtool() {
    let Some((_, promtool)) = tools() else {
        return;
    };
    let dir = workspace().join("observability/prometheus");
    for args in [
        vec!["check", "rules", "alerts.yml"],
        vec!["test", "rules", "alerts.test.yml"],
    ] {
        let out = Command::new(&promtool)
            .args(&args)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "promtool {args:?}:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn recorded_file() -> String {
    std::fs::read_to_string(workspace().join("observability/prometheus/alerts.test.yml")).unwrap()
}

fn tempdir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("laneway-observability-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The series the rules read, recorded from the demo run.
const RECORDED: &[&str] = &[
    "laneway_region_ejected",
    "laneway_breaker_state",
    "laneway_attempts_total",
    "laneway_attempt_errors_total",
    "laneway_requests_total",
    "laneway_errors_total",
    "laneway_slo_calls_total",
    "laneway_queue_wait_seconds_sum",
    "laneway_queue_wait_seconds_count",
    "laneway_shared_state_degraded",
];

/// One recorded series: its labels and a value per scrape (`None` before it appeared).
struct Series {
    name: String,
    labels: Vec<(String, String)>,
    values: Vec<Option<f64>>,
}

impl Series {
    fn label(&self, k: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(l, _)| l == k)
            .map(|(_, v)| v.as_str())
    }

    fn selector(&self) -> String {
        let labels: Vec<String> = self
            .labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{v}\""))
            .collect();
        format!("{}{{{}}}", self.name, labels.join(","))
    }

    /// The values in `promtool`'s expanding notation: runs as `a+0xN`, gaps as `_`.
    fn notation(&self) -> String {
        let mut out: Vec<String> = Vec::new();
        let mut i = 0;
        while i < self.values.len() {
            let v = self.values[i];
            let mut n = 1;
            while i + n < self.values.len() && self.values[i + n] == v {
                n += 1;
            }
            out.push(match (v, n) {
                (None, 1) => "_".to_string(),
                (None, n) => format!("_x{}", n - 1),
                (Some(v), 1) => format!("{v}"),
                (Some(v), n) => format!("{v}+0x{}", n - 1),
            });
            i += n;
        }
        out.join(" ")
    }
}

/// A Prometheus text sample: its name, labels and value.
type Sample = (String, Vec<(String, String)>, f64);

/// One Prometheus text sample line.
fn parse_sample(line: &str) -> Option<Sample> {
    let (head, value) = line.rsplit_once(' ')?;
    let value: f64 = value.parse().ok()?;
    let Some((name, labels)) = head.split_once('{') else {
        return Some((head.to_string(), Vec::new(), value));
    };
    let mut out = Vec::new();
    let mut rest = labels.strip_suffix('}')?;
    while let Some((key, tail)) = rest.split_once("=\"") {
        let mut val = String::new();
        let mut chars = tail.char_indices();
        let mut end = tail.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, e)) = chars.next() {
                        val.push(if e == 'n' { '\n' } else { e });
                    }
                }
                '"' => {
                    end = i + 1;
                    break;
                }
                c => val.push(c),
            }
        }
        out.push((key.trim_start_matches(',').to_string(), val));
        rest = &tail[end..];
    }
    Some((name.to_string(), out, value))
}

/// The recorded metrics' series across `scrapes`, one value per scrape.
fn series_of(scrapes: &[String]) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for (i, text) in scrapes.iter().enumerate() {
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let Some((name, labels, value)) = parse_sample(line) else {
                continue;
            };
            if !RECORDED.contains(&name.as_str()) {
                continue;
            }
            let at = out
                .iter()
                .position(|s| s.name == name && s.labels == labels)
                .unwrap_or_else(|| {
                    out.push(Series {
                        name: name.clone(),
                        labels: labels.clone(),
                        values: vec![None; scrapes.len()],
                    });
                    out.len() - 1
                });
            out[at].values[i] = Some(value);
        }
    }
    out.sort_by(|a, b| (&a.name, &a.labels).cmp(&(&b.name, &b.labels)));
    out
}

/// Writes `alerts.test.yml`: the recorded series, one sample a minute, and what the rules must
/// say of them, anchored where the recorded gauges and counters show the injected faults.
fn record(scrapes: &[String]) {
    let series = series_of(scrapes);
    let first_where = |name: &str, pick: &dyn Fn(&Series) -> bool, cond: &dyn Fn(f64) -> bool| {
        series
            .iter()
            .filter(|s| s.name == name && pick(s))
            .filter_map(|s| s.values.iter().position(|v| v.is_some_and(cond)))
            .min()
    };
    let east = |s: &Series| s.label("cloud_region") == Some("us-east-1");
    let ejected = first_where("laneway_region_ejected", &east, &|v| v > 0.0)
        .expect("the recording shows us-east-1 ejected");
    let degraded = first_where("laneway_shared_state_degraded", &|_| true, &|v| v > 0.0)
        .expect("the recording shows the shared state degraded");
    // The outage's failures: the first scrape after which us-east-1's failed attempts grew
    // (a counter's first sample is not an increase to rate()).
    let failing = series
        .iter()
        .filter(|s| {
            s.name == "laneway_attempt_errors_total"
                && east(s)
                && s.label("error_type") != Some("throttled")
        })
        .filter_map(|s| {
            s.values
                .windows(2)
                .position(|w| matches!(w, [Some(a), Some(b)] if b > a))
                .map(|i| i + 1)
        })
        .min()
        .unwrap_or_else(|| {
            let seen: Vec<String> = series
                .iter()
                .filter(|s| s.name == "laneway_attempts_total" && east(s))
                .map(|s| format!("{}: {}", s.selector(), s.notation()))
                .collect();
            panic!(
                "the recording shows no growth of us-east-1's failed attempts:\n{}",
                seen.join("\n")
            )
        });
    let run = |from: usize| {
        series
            .iter()
            .filter(|s| s.name == "laneway_region_ejected" && east(s))
            .map(|s| {
                s.values[from..]
                    .iter()
                    .take_while(|v| v.is_some_and(|v| v > 0.0))
                    .count()
            })
            .max()
            .unwrap_or(0)
    };
    assert!(
        run(ejected) >= 3,
        "us-east-1 was ejected for too short a time to check `for:`"
    );
    let end = series[0].values.len() - 1;
    let m = |i: usize| format!("{i}m");
    let rules =
        std::fs::read_to_string(workspace().join("observability/prometheus/alerts.yml")).unwrap();
    let firing = |alert: &str, labels: &[(&str, &str)]| {
        let mut exp_labels: serde_json::Map<String, Value> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        let (severity, annotations) = annotations(&rules, alert, labels);
        exp_labels.insert("severity".into(), json!(severity));
        json!([{"exp_labels": exp_labels, "exp_annotations": annotations}])
    };
    let east_only = [("cloud_region", "us-east-1")];
    let tests = json!([{
        "interval": "1m",
        "input_series": series.iter().map(|s| json!({"series": s.selector(), "values": s.notation()})).collect::<Vec<_>>(),
        "alert_rule_test": [
            // Ejected: pending for the `for:` window, then firing, for us-east-1 only; over once
            // the region is back.
            {"eval_time": m(ejected + 1), "alertname": "LanewayRegionEjected", "exp_alerts": []},
            {"eval_time": m(ejected + 2), "alertname": "LanewayRegionEjected", "exp_alerts": firing("LanewayRegionEjected", &east_only)},
            // Resolved once no sample of the last five minutes has it ejected.
            {"eval_time": m(ejected + run(ejected) + 5), "alertname": "LanewayRegionEjected", "exp_alerts": []},
            // The failures that ejected it: us-east-1's attempts fail, no other region's, and
            // not before the outage.
            {"eval_time": m(failing.saturating_sub(2)), "alertname": "LanewayRegionAttemptsFailing", "exp_alerts": []},
            {"eval_time": m(failing + 2), "alertname": "LanewayRegionAttemptsFailing", "exp_alerts": firing("LanewayRegionAttemptsFailing", &east_only)},
            // Failover kept every call: no call failed.
            {"eval_time": m(failing + 2), "alertname": "LanewayCallsFailing", "exp_alerts": []},
            {"eval_time": m(end), "alertname": "LanewayCallsFailing", "exp_alerts": []},
            // Redis was never there: pending, then firing.
            {"eval_time": m(degraded + 1), "alertname": "LanewaySharedStateDegraded", "exp_alerts": []},
            {"eval_time": m(degraded + 2), "alertname": "LanewaySharedStateDegraded", "exp_alerts": firing("LanewaySharedStateDegraded", &[])},
        ],
    }]);
    let header = format!(
        "# Series recorded from `laneway demo` (us-east-1 down from 1.5 s to 3 s after the emulator started,\n\
         # Redis unreachable) scraped every {SCRAPE}, one scrape a minute here so that the rules' `for:`\n\
         # windows play out in promtool's time. Written by\n\
         # `LANEWAY_RECORD_ALERT_SERIES=1 cargo test -p laneway-cli --test observability`; JSON is YAML.\n"
    );
    let body = serde_json::to_string_pretty(&json!({
        "rule_files": ["alerts.yml"],
        "evaluation_interval": "1m",
        "tests": tests,
    }))
    .unwrap();
    std::fs::write(
        workspace().join("observability/prometheus/alerts.test.yml"),
        header + &body + "\n",
    )
    .unwrap();
}

/// An alert's severity and its annotations with `labels` put in, read from the rules file
/// (`summary` on one quoted line, `description` folded with `>-`).
fn annotations(rules: &str, alert: &str, labels: &[(&str, &str)]) -> (String, Value) {
    let start = rules
        .find(&format!("- alert: {alert}\n"))
        .unwrap_or_else(|| panic!("{alert} is not in alerts.yml"));
    let block = &rules[start..];
    let block = &block[..block[2..].find("- alert:").map_or(block.len(), |i| i + 2)];
    let render = |text: &str| {
        let mut text = text.to_string();
        for (k, v) in labels {
            text = text.replace(&format!("{{{{ $labels.{k} }}}}"), v);
        }
        text
    };
    let mut severity = String::new();
    let mut out = serde_json::Map::new();
    let mut lines = block.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim();
        if let Some(v) = t.strip_prefix("severity:") {
            severity = v.trim().to_string();
        } else if let Some(v) = t.strip_prefix("summary:") {
            out.insert("summary".into(), json!(render(v.trim().trim_matches('"'))));
        } else if t == "description: >-" {
            let mut folded = Vec::new();
            while let Some(next) = lines.peek() {
                if next.trim().is_empty() || !next.starts_with("            ") {
                    break;
                }
                folded.push(lines.next().unwrap().trim());
            }
            out.insert("description".into(), json!(render(&folded.join(" "))));
        }
    }
    (severity, Value::Object(out))
}
