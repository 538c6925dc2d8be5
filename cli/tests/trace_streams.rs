//! Traces are read as streams: `laneway advise` and `laneway twin fit` take ten times the lines
//! in about the same memory, and a trace with malformed, truncated or hostile lines is read
//! with the bad ones counted and named by line number, never a crash. And a trace replayed
//! against configurations: `bench --trace` says when a candidate beats the one in force, and
//! `recommend --trace` picks under constraints.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn laneway(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_laneway"))
        .args(args)
        .env("LANEWAY_REPORT_PEAK_RSS", "1")
        .output()
        .expect("the laneway binary runs")
}

fn workdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("laneway-streams-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A trace of `calls` calls ten a second, each with a prefix of its own and one of a few shared
/// system prompts, an outcome for every fifth, and a load line every hundred.
fn trace(path: &Path, calls: u64) {
    trace_with_target(path, calls, 2000);
}

/// `trace`, its calls' TTFT target `ttft_target_ms`.
fn trace_with_target(path: &Path, calls: u64, ttft_target_ms: u64) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(
        out,
        r#"{{"line":"header","schema":1,"config_digest":"c0ffee","sample":1.0,"started_ms":1796400000000}}"#
    )
    .unwrap();
    for i in 0..calls {
        let at = 1_796_400_000_000 + i * 100;
        let (class, tier, target) = if i % 2 == 0 {
            ("interactive", "priority", "amazon.nova-lite-v1:0")
        } else {
            ("background", "flex", "us.amazon.nova-lite-v1:0")
        };
        let shared = i % 7;
        writeln!(
            out,
            r#"{{"line":"call","at_ms":{at},"call_id":"lw1:{i:016x}","class":"{class}","ttft_target_ms":{ttft_target_ms},"requested":"amazon.nova-lite-v1:0","model":"amazon.nova-lite-v1:0","target":"{target}","region":"us-east-1","scope":"in_region","tier":"{tier}","served_tier":"{tier}","input_tokens":{},"output_tokens":{},"cache_read_tokens":0,"cache_write_tokens":0,"reasoning_tokens":0,"prefixes":[{{"digest":"shared{shared:010}","tokens":2048}},{{"digest":"own{i:016x}","tokens":2100}}],"ttft_ms":{},"inter_token_ms":[4.0,6.0,9.0],"total_ms":{},"cost_usd":0.0002,"task":"task{}"}}"#,
            2100 + i % 300,
            50 + i % 200,
            300 + (i * 7919) % 400,
            900 + (i * 104_729) % 900,
            i / 3
        )
        .unwrap();
        if i % 5 == 0 {
            writeln!(
                out,
                r#"{{"line":"outcome","at_ms":{},"call_id":"lw1:{i:016x}","success":true,"source":"task"}}"#,
                at + 50
            )
            .unwrap();
        }
        if i % 100 == 99 {
            writeln!(
                out,
                r#"{{"line":"load","at_ms":{at},"targets":[{{"region":"us-east-1","target":"{target}","tier":"{tier}","ok":{},"failed":{{"throttled":{}}}}}]}}"#,
                i / 2,
                i / 200
            )
            .unwrap();
        }
    }
}

/// The peak resident memory the command reported, in kB.
fn peak_kb(o: &Output) -> u64 {
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "{}\n{stderr}",
        String::from_utf8_lossy(&o.stdout)
    );
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("peak resident memory: "))
        .and_then(|v| v.trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak memory in\n{stderr}"))
}

#[test]
fn ten_times_the_trace_in_about_the_same_memory() {
    let dir = workdir("flat");
    let (small, large) = (dir.join("10k.jsonl"), dir.join("100k.jsonl"));
    // About 10,000 and 100,000 lines (calls, their outcomes, load lines).
    trace(&small, 8_200);
    trace(&large, 82_000);
    let lines = |p: &Path| std::fs::read_to_string(p).unwrap().lines().count();
    assert!(
        (9_000..11_000).contains(&lines(&small)),
        "{}",
        lines(&small)
    );
    assert!(
        (90_000..110_000).contains(&lines(&large)),
        "{}",
        lines(&large)
    );
    let s = |p: &Path| p.to_str().unwrap().to_string();
    for command in [
        vec!["advise".to_string(), "--trace".into()],
        vec![
            "twin".to_string(),
            "fit".into(),
            "--out".into(),
            s(&dir.join("twin.toml")),
            "--trace".into(),
        ],
    ] {
        let run = |trace: &Path| {
            let mut args: Vec<String> = command.clone();
            args.push(s(trace));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            peak_kb(&laneway(&args))
        };
        let (at_10k, at_100k) = (run(&small), run(&large));
        eprintln!(
            "{}: peak {at_10k} kB at 10,000 lines, {at_100k} kB at 100,000",
            command[0]
        );
        // Flat: ten times the lines cost at most a quarter more (the prefixes a cache could
        // still hold, bounded reservoirs), not ten times.
        assert!(
            at_100k <= at_10k + at_10k / 4,
            "{}: {at_10k} kB at 10,000 lines, {at_100k} kB at 100,000",
            command[0]
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_lines_are_counted_and_named_never_a_crash() {
    let dir = workdir("hostile");
    let path = dir.join("hostile.jsonl");
    trace(&path, 200);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    // The bad lines follow the good ones.
    let good_lines = std::fs::read_to_string(&path).unwrap().lines().count();
    f.write_all(b"{\"line\":\"call\",\"at_ms\":\"soon\"}\n")
        .unwrap(); // wrong type
    f.write_all(b"not json at all\n").unwrap();
    f.write_all(&[0xff, 0xfe, 0x00, b'\n']).unwrap(); // not UTF-8
    f.write_all(b"{\"line\":\"header\",\"schema\":99,\"config_digest\":\"x\",\"sample\":1,\"started_ms\":0}\n")
        .unwrap();
    f.write_all(
        format!(
            "{{\"line\":\"call\",\"pad\":\"{}\"}}\n",
            "x".repeat(2 << 20)
        )
        .as_bytes(),
    )
    .unwrap(); // longer than a reader takes
    f.write_all(b"{\"line\":\"call\",\"at_ms\":1e400,\"class\":\"x\"}\n")
        .unwrap(); // out of range
    f.write_all(b"{\"line\":\"call\",\"at_ms\":179640000")
        .unwrap(); // cut short by a crash
    drop(f);
    let s = path.to_str().unwrap();
    for args in [
        vec!["advise", "--trace", s],
        vec!["twin", "fit", "--trace", s, "--out", "/dev/null"],
    ] {
        let o = laneway(&args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{args:?}\n{stderr}");
        assert!(stderr.contains("7 bad lines skipped"), "{args:?}\n{stderr}");
        for n in (good_lines + 1)..=(good_lines + 5) {
            assert!(
                stderr.contains(&format!("hostile.jsonl:{n}: skipped")),
                "{args:?}: line {n} named\n{stderr}"
            );
        }
        assert!(
            stderr.contains("not UTF-8") && stderr.contains("schema 99"),
            "{stderr}"
        );
    }
    // A file that is not a trace at all: a clear error, not a crash.
    let empty = dir.join("empty.jsonl");
    std::fs::write(&empty, "garbage\n").unwrap();
    let o = laneway(&["advise", "--trace", empty.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no recorded calls"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_replay_says_when_a_candidate_beats_the_configuration_in_force() {
    let dir = workdir("replay");
    let path = dir.join("trace.jsonl");
    // A target no configuration misses, even on a machine busy with other tests: the
    // comparison is of cost.
    trace_with_target(&path, 200, 20_000);
    let cheaper = dir.join("standard.toml");
    std::fs::write(&cheaper, "[slo_tiers]\ninteractive = [\"standard\"]\n").unwrap();
    let (p, c) = (
        path.to_str().unwrap(),
        format!("standard={}", cheaper.display()),
    );
    let out = dir.join("replay");
    let common = [
        "--trace",
        p,
        "--scenario",
        "fast",
        "--time-scale",
        "0.1",
        "--candidate-config",
        &c,
    ];
    let mut args = vec![
        "bench",
        "--fail-if-dominated",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(common);
    let o = laneway(&args);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("| baseline | 200/200 |"), "{stdout}");
    assert!(stdout.contains("Beats the baseline on cost and every class's attainment: standard"));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("replay.json")).unwrap()).unwrap();
    let [baseline, standard] = [&report["results"][0], &report["results"][1]];
    assert!(standard["cost_usd"].as_f64() < baseline["cost_usd"].as_f64());
    assert_eq!(baseline["classes"]["interactive"]["calls"], 100);
    let html = std::fs::read_to_string(out.join("replay.html")).unwrap();
    assert!(
        html.contains("Class interactive: p99 against cost")
            && html.contains("Cost over the recorded period")
    );

    let mut args = vec![
        "recommend",
        "--objective",
        "cost",
        "--constraint",
        "ttft_slo>=90%",
    ];
    args.extend(common);
    let o = laneway(&args);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("standard"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}
