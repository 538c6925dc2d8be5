//! `laneway demo` runs end to end and prints a row per lane.

use std::process::Command;

#[test]
fn demo_runs_and_prints_every_lane() {
    let out = Command::new(env!("CARGO_BIN_EXE_laneway"))
        .args(["demo", "--time-scale", "0.05", "--requests", "6"])
        .output()
        .expect("the laneway binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "exit {:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    for lane in [
        "interactive chat",
        "standard summaries",
        "background jobs",
        "self-hosted",
    ] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(lane))
            .unwrap_or_else(|| panic!("no row for {lane}:\n{stdout}"));
        assert!(row.contains("6/6"), "{row}");
    }
    assert!(
        stdout.contains("priority") && stdout.contains("flex"),
        "{stdout}"
    );
    // Variant routing beside the family's default variant, on prompts with known outcomes.
    let routed = stdout
        .lines()
        .find(|l| l.starts_with("routed (the family's default router)"))
        .unwrap_or_else(|| panic!("no routing row:\n{stdout}"));
    assert!(routed.contains("haiku"), "{routed}");
    assert!(stdout.contains("default variant only"), "{stdout}");
    assert!(stdout.contains("against the default variant"), "{stdout}");
    // The router's own metrics close the demo: lanes, SLO attainment, cost per successful task.
    assert!(stdout.contains("router.metrics()"), "{stdout}");
    assert!(stdout.contains("SLO interactive:"), "{stdout}");
    let tasks = stdout
        .lines()
        .find(|l| l.starts_with("tasks: "))
        .unwrap_or_else(|| panic!("no task line:\n{stdout}"));
    // 4 lanes x ceil(6 / 3) tasks, all successful.
    assert!(tasks.contains("8 finished, 8 successful"), "{tasks}");
    assert!(tasks.contains("per successful task $"), "{tasks}");
    assert!(
        stdout.contains("batch lane: 120/120 answered by 1 job(s)"),
        "{stdout}"
    );
    // The same workload through the naive client, side by side.
    let answered = stdout
        .lines()
        .find(|l| l.starts_with("calls answered"))
        .unwrap_or_else(|| panic!("no side-by-side table:\n{stdout}"));
    assert!(answered.trim_end().ends_with("24/24"), "{answered}");
    for row in [
        "interactive: TTFT p50 / p99",
        "interactive: TTFT target met",
        "cost per successful task",
        "input read from cache",
    ] {
        assert!(stdout.contains(row), "{row}:\n{stdout}");
    }
    let saving = stdout
        .lines()
        .find(|l| l.starts_with("saving: "))
        .unwrap_or_else(|| panic!("no saving line:\n{stdout}"));
    assert!(saving.contains("Laneway 0;"), "{saving}");
}

#[test]
fn bad_arguments_are_reported_not_panicked() {
    let out = Command::new(env!("CARGO_BIN_EXE_laneway"))
        .args(["demo", "--scenario", "no-such-scenario"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-scenario"));
}

/// `--metrics-addr` serves the router's metrics while the demo runs, and `--metrics-linger`
/// keeps them there after it ends, for a scraper to read the last figures.
#[test]
fn the_demo_serves_its_metrics_for_a_scraper() {
    use std::io::{BufRead as _, Read as _, Write as _};
    let mut child = Command::new(env!("CARGO_BIN_EXE_laneway"))
        .args([
            "demo",
            "--time-scale",
            "0.05",
            "--requests",
            "4",
            "--metrics-addr",
            "127.0.0.1:0",
            "--metrics-linger",
            "30",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the laneway binary runs");
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut addr = None;
    let mut finished = false;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(url) = line.strip_prefix("metrics: http://") {
            addr = url.strip_suffix("/metrics").map(str::to_string);
        }
        // The demo's last table is out: its calls are all counted.
        if line.contains("The router's own metrics") {
            finished = true;
            break;
        }
    }
    let addr = addr.expect("the demo printed where its metrics are");
    assert!(finished);
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    child.kill().ok();
    child.wait().ok();
    assert!(body.starts_with("HTTP/1.1 200"), "{body}");
    assert!(
        body.contains("gen_ai_client_operation_duration_seconds_count"),
        "{body}"
    );
    assert!(body.contains("laneway_cost_usd_total"), "{body}");
}
