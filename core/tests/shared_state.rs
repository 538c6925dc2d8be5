//! Shared state through a real redis-server: router processes sharing one reservation, a
//! breaker opened in one process honoured by the others, half-open probes coordinated, and
//! Redis killed mid-run without losing a request.
//!
//! Replicas are separate processes: this test binary started again with `--ignored --exact
//! replica_process`, driven by JSON lines on stdin.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use common::redis_server::{RedisCluster, RedisServer};
use futures::StreamExt;
use laneway::{GenerateRequest, Router};
use laneway_emulator::{Emulator, Fault, FaultKind, TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY};
use serde_json::{Value, json};

const SONNET: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";
const LITE: &str = "amazon.nova-lite-v1:0";
/// 3,000 output tokens a minute reserved for Sonnet: sixty 50-token calls.
const RESERVED_OUTPUT_TPM: u64 = 3000;

fn replica_config(redis_url: Option<&str>, prefix: &str) -> String {
    let mut c = format!(
        "[routing.breaker]\nfailure_threshold = 2\nopen_for = 4000.0\nhalf_open_probes = 1\n\
         [models.\"{SONNET}\"]\nreserved = {{ input_tokens_per_minute = 100000000, output_tokens_per_minute = {RESERVED_OUTPUT_TPM} }}\n"
    );
    if let Some(url) = redis_url {
        c += &format!(
            "[shared]\nredis_url = \"{url}\"\nkey_prefix = \"{prefix}\"\nreplicas = 3\ntimeout = 50.0\nsync_interval = 100.0\n"
        );
    }
    c
}

/// A router process.
struct Replica {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Replica {
    fn spawn(emulator_url: &str, config: &str) -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "replica_process",
                "--nocapture",
                "--quiet",
            ])
            .env("LANEWAY_TEST_EMULATOR", emulator_url)
            .env("LANEWAY_TEST_CONFIG", config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut r = Self {
            child,
            stdin,
            stdout,
        };
        assert_eq!(r.read()["ready"], true);
        r
    }

    fn send(&mut self, command: Value) {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next JSON line the replica printed (test-harness chatter skipped).
    fn read(&mut self) -> Value {
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "replica exited"
            );
            if let Some(json) = line.strip_prefix("REPLICA ") {
                return serde_json::from_str(json).unwrap();
            }
        }
    }

    fn call(&mut self, command: Value) -> Value {
        self.send(command);
        self.read()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "{}", json!({"cmd": "quit"}));
        let _ = self.child.wait();
    }
}

/// The replica's side: a router driven by commands until `quit`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a router process started by the multi-process tests in this file"]
async fn replica_process() {
    let url = std::env::var("LANEWAY_TEST_EMULATOR").expect("started by a test");
    let config =
        laneway::Config::from_toml_str(&std::env::var("LANEWAY_TEST_CONFIG").unwrap()).unwrap();
    let router = Router::builder()
        .config(config)
        .endpoint_url(url)
        .static_credentials(TEST_ACCESS_KEY_ID, TEST_SECRET_ACCESS_KEY)
        .build()
        .await
        .unwrap();
    let say = |v: Value| println!("REPLICA {v}");
    say(json!({"ready": true}));
    let (tx, mut lines) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    while let Some(line) = lines.recv().await {
        let cmd: Value = serde_json::from_str(&line).unwrap();
        match cmd["cmd"].as_str().unwrap() {
            "run" => {
                let model = cmd["model"].as_str().unwrap().to_string();
                let n = cmd["requests"].as_u64().unwrap() as usize;
                let concurrency = cmd["concurrency"].as_u64().unwrap() as usize;
                let outcomes: Vec<_> = futures::stream::iter(0..n)
                    .map(|i| {
                        let mut req = GenerateRequest::user(format!("replica call {i}"))
                            .model(model.clone())
                            .max_tokens(50);
                        if let Some(regions) = cmd["regions"].as_array() {
                            req = req.residency(laneway::Residency::Regions(
                                regions
                                    .iter()
                                    .map(|r| r.as_str().unwrap().to_string())
                                    .collect(),
                            ));
                        }
                        let router = &router;
                        async move { router.generate(req).await }
                    })
                    .buffer_unordered(concurrency)
                    .collect()
                    .await;
                let mut regions = BTreeMap::<String, u64>::new();
                let mut tiers = BTreeMap::<String, u64>::new();
                let (mut ok, mut failed_attempts, mut errors) = (0, 0, Vec::new());
                // Calls the ledger expected the reservation to serve that Bedrock served at
                // standard: how wrong this replica's picture of the reservation was.
                let mut surprises = 0;
                for o in outcomes {
                    match o {
                        Ok(r) => {
                            ok += 1;
                            failed_attempts += r.decision.failed_attempts.len();
                            *regions.entry(r.decision.region.clone()).or_default() += 1;
                            let served = r.decision.served_tier.or(r.decision.tier);
                            let tier = served.map(|t| t.to_string()).unwrap_or_default();
                            *tiers.entry(tier).or_default() += 1;
                            let expected_overflow = r.decision.reasons.iter().any(|x| {
                                matches!(
                                    x,
                                    laneway::Reason::ReservedOverflow {
                                        cause: laneway::plan::OverflowCause::Full,
                                        ..
                                    }
                                )
                            });
                            if !expected_overflow && served == Some(laneway::ServiceTier::STANDARD)
                            {
                                surprises += 1;
                            }
                        }
                        Err(e) => errors.push(e.to_string()),
                    }
                }
                say(
                    json!({"ok": ok, "errors": errors, "regions": regions, "tiers": tiers, "failed_attempts": failed_attempts, "surprises": surprises}),
                );
            }
            "status" => {
                let m = router.metrics();
                say(serde_json::to_value(m.shared).unwrap());
            }
            // How this replica's plan sees Nova Lite's targets now: region -> breaker view of
            // those it demotes (a healthy target, or one with a free probe, is not listed).
            "health" => {
                let req =
                    GenerateRequest::user("h")
                        .model(LITE)
                        .residency(laneway::Residency::Regions(vec![
                            "us-east-1".into(),
                            "us-west-2".into(),
                        ]));
                let mut demoted = BTreeMap::<String, String>::new();
                for r in router.plan(&req).unwrap().reasons {
                    if let laneway::Reason::TargetDemoted { region, health, .. } = r {
                        demoted.insert(region.to_string(), format!("{health:?}"));
                    }
                }
                say(json!(demoted));
            }
            "quit" => return,
            other => panic!("unknown command {other}"),
        }
    }
}

fn reserved_output_tokens(emu: &Emulator) -> u64 {
    emu.counters()
        .iter()
        .filter(|c| c.tier == "reserved")
        .map(|c| c.counter.output_tokens)
        .sum()
}

/// The built-in world where Sonnet holds a reservation of [`RESERVED_OUTPUT_TPM`] and a minute
/// lasts a minute (time scale 1), with Sonnet fast enough for the test.
async fn reservation_world() -> Emulator {
    common::real_minute_emulator(SONNET, |m| {
        m.reservation = Some(laneway_emulator::ReservationSpec {
            input_tokens_per_minute: 100_000_000,
            output_tokens_per_minute: RESERVED_OUTPUT_TPM,
        })
    })
    .await
}

/// Three replicas send 40 Sonnet calls each at once; returns the reserved output tokens the
/// emulator served and the replicas' surprises (calls their ledger expected the reservation to
/// serve that were served at standard).
fn three_replicas_on_one_reservation(
    emu: &Emulator,
    redis_url: Option<&str>,
    prefix: &str,
) -> (u64, u64) {
    let config = replica_config(redis_url, prefix);
    let mut replicas: Vec<Replica> = (0..3)
        .map(|_| Replica::spawn(&emu.url(), &config))
        .collect();
    for r in &mut replicas {
        r.send(json!({"cmd": "run", "model": SONNET, "requests": 40, "concurrency": 8}));
    }
    let mut surprises = 0;
    for r in &mut replicas {
        let out = r.read();
        assert_eq!(out["ok"], 40, "{out}");
        surprises += out["surprises"].as_u64().unwrap();
    }
    (reserved_output_tokens(emu), surprises)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_share_one_picture_of_one_reservation() {
    let redis = RedisServer::start();
    let capacity = RESERVED_OUTPUT_TPM as f64;
    // Bedrock decides what the reservation serves: sixty 50-token calls of the 120, whatever
    // the replicas think.
    let emu = reservation_world().await;
    let (served, shared) =
        three_replicas_on_one_reservation(&emu, Some(&redis.url()), "one-reservation");
    eprintln!("with Redis: {served} reserved tokens served of {capacity}; {shared} surprises");
    assert!(
        (served as f64 - capacity).abs() <= capacity * 0.05,
        "{served} of {capacity}"
    );
    emu.shutdown().await;

    // Without Redis each process believes the whole reservation is its own, until Bedrock's
    // served tier tells it otherwise (then it takes the reservation as full for a while).
    let emu = reservation_world().await;
    let (served, alone) = three_replicas_on_one_reservation(&emu, None, "unused");
    eprintln!("without Redis: {served} reserved tokens served; {alone} surprises");
    assert!((served as f64 - capacity).abs() <= capacity * 0.05);
    emu.shutdown().await;
    assert!(
        shared <= 8,
        "with the fleet's ledger: {shared} surprises of 120"
    );
    assert!(alone >= 12, "each replica alone: {alone} surprises of 120");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_breaker_opened_in_one_process_is_honoured_by_the_others() {
    let redis = RedisServer::start();
    let emu = common::emulator().await;
    let config = replica_config(Some(&redis.url()), "breakers");
    let mut a = Replica::spawn(&emu.url(), &config);
    let mut b = Replica::spawn(&emu.url(), &config);
    let mut c = Replica::spawn(&emu.url(), &config);

    // In us-east-1 and us-west-2 only (one target per region), us-east-1 comes first for Nova
    // Lite; it fails for A until A's breaker opens.
    let outage = emu.add_fault(
        Fault::new(FaultKind::Outage)
            .for_region("us-east-1")
            .for_model(LITE),
    );
    let out = a.call(json!({"cmd": "run", "model": LITE, "regions": ["us-east-1", "us-west-2"], "requests": 4, "concurrency": 1}));
    assert_eq!(out["ok"], 4, "{out}");
    assert_eq!(
        out["failed_attempts"], 2,
        "two failures open the breaker: {out}"
    );
    // us-east-1 is healthy again: only the shared breaker keeps B and C away from it. They
    // learn of it at their next read of the fleet's breakers.
    emu.remove_fault(outage);
    let east = |r: &mut Replica| r.call(json!({"cmd": "health"}))["us-east-1"].clone();
    for r in [&mut b, &mut c] {
        common::poll_until("A's open breaker reached B and C", || east(r) == "Open").await;
    }
    for r in [&mut b, &mut c] {
        let out = r.call(json!({"cmd": "run", "model": LITE, "regions": ["us-east-1", "us-west-2"], "requests": 3, "concurrency": 1}));
        assert_eq!(out["ok"], 3, "{out}");
        assert!(out["regions"].get("us-east-1").is_none(), "{out}");
        assert_eq!(out["failed_attempts"], 0, "{out}");
    }
    // The premise held: the open period had not ended while B and C ran.
    assert_eq!(east(&mut c), "Open");

    // Once the open period is over, one probe goes for the whole fleet: B and C ask at once,
    // one of them holds the lease and probes us-east-1, the other goes elsewhere.
    for r in [&mut b, &mut c] {
        common::poll_until("the open period ended", || east(r).is_null()).await;
    }
    b.send(json!({"cmd": "run", "model": LITE, "regions": ["us-east-1", "us-west-2"], "requests": 1, "concurrency": 1}));
    c.send(json!({"cmd": "run", "model": LITE, "regions": ["us-east-1", "us-west-2"], "requests": 1, "concurrency": 1}));
    let (ob, oc) = (b.read(), c.read());
    let probes = [&ob, &oc]
        .iter()
        .filter(|o| o["regions"].get("us-east-1").is_some())
        .count();
    assert_eq!(probes, 1, "{ob}\n{oc}");
    // The probe succeeded: everyone is back on us-east-1 once their next sync has closed
    // their own half-open breaker (one call at a time until one lands there).
    for r in [&mut a, &mut b, &mut c] {
        common::poll_until("the probe's success reached every replica", || {
            let out = r.call(json!({"cmd": "run", "model": LITE, "regions": ["us-east-1", "us-west-2"], "requests": 1, "concurrency": 1}));
            out["regions"]["us-east-1"] == 1
        })
        .await;
    }
    for r in [&mut a, &mut b, &mut c] {
        let out = r.call(json!({"cmd": "run", "model": LITE, "regions": ["us-east-1", "us-west-2"], "requests": 2, "concurrency": 1}));
        assert_eq!(out["regions"]["us-east-1"], 2, "{out}");
    }
    emu.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_redis_mid_run_loses_no_request() {
    let mut redis = RedisServer::start();
    let emu = common::emulator().await;
    let config = replica_config(Some(&redis.url()), "outage");
    let mut replicas: Vec<Replica> = (0..3)
        .map(|_| Replica::spawn(&emu.url(), &config))
        .collect();
    for r in &mut replicas {
        r.send(json!({"cmd": "run", "model": SONNET, "requests": 60, "concurrency": 2}));
    }
    // Mid-run: once the fleet has sent a sixth of its calls.
    common::poll_until("the replicas' calls started", || {
        common::requests_seen(&emu) >= 30
    })
    .await;
    redis.kill();
    for r in &mut replicas {
        let out = r.read();
        assert_eq!(out["ok"], 60, "{out}");
        assert_eq!(out["errors"].as_array().unwrap().len(), 0, "{out}");
    }
    for r in &mut replicas {
        let status = r.call(json!({"cmd": "status"}));
        assert_eq!(status["degraded"], true, "{status}");
        assert_eq!(
            status["degraded_episodes"], 1,
            "logged and counted once: {status}"
        );
    }
    // Redis returns: the replicas use it again once their health check has seen it.
    redis.restart();
    for r in &mut replicas {
        common::poll_until("the replica saw Redis back", || {
            r.call(json!({"cmd": "status"}))["degraded"] == false
        })
        .await;
    }
    for r in &mut replicas {
        let out = r.call(json!({"cmd": "run", "model": SONNET, "requests": 3, "concurrency": 1}));
        assert_eq!(out["ok"], 3, "{out}");
        let status = r.call(json!({"cmd": "status"}));
        assert_eq!(status["degraded"], false, "{status}");
    }
    emu.shutdown().await;
}

#[tokio::test]
async fn without_a_reachable_redis_a_router_serves_from_local_state() {
    // Nothing listens on this port.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let emu = common::emulator().await;
    let config = common::config(&replica_config(
        Some(&format!("redis://127.0.0.1:{port}/0")),
        "nobody",
    ));
    let router = common::router_with(&emu, config).await;
    for i in 0..5 {
        router
            .generate(
                GenerateRequest::user(format!("hi {i}"))
                    .model(SONNET)
                    .max_tokens(20),
            )
            .await
            .unwrap();
    }
    let m = router.metrics();
    let status = m.shared.unwrap();
    assert!(
        status.degraded && status.degraded_episodes == 1,
        "{status:?}"
    );
    assert!(status.fallback_admissions >= 1, "{status:?}");
    assert!(m.prometheus().contains("laneway_shared_state_degraded 1"));
    emu.shutdown().await;
}

#[test]
fn shared_configuration_is_checked() {
    let bad = |extra: &str| {
        laneway::Config::from_toml_str(&format!("[shared]\n{extra}\n"))
            .unwrap_err()
            .to_string()
    };
    assert!(bad("redis_url = \"http://x\"").contains("shared.redis_url"));
    assert!(bad("redis_url = \"redis://x\"\nkey_prefix = \"{a}\"").contains("shared.key_prefix"));
    assert!(bad("redis_url = \"redis://x\"\nreplicas = 0").contains("shared.replicas"));
    let ok =
        laneway::Config::from_toml_str("[shared]\nredis_url = \"rediss://user:pw@cache:6380/2\"\n")
            .unwrap();
    let shared = ok.shared.unwrap();
    assert_eq!(
        (shared.key_prefix.as_str(), shared.replicas),
        ("laneway", 1)
    );
}

#[tokio::test]
async fn a_prefix_cached_by_one_replica_draws_the_others_to_its_region() {
    let redis = RedisServer::start();
    let emu = common::emulator().await;
    // On the family's default variant: the prefix's region, not the variant, is the subject.
    let config = || {
        common::config(&format!(
            "{}\n[families.claude]\nrouter = false\n",
            replica_config(Some(&redis.url()), "prefixes")
        ))
    };
    let first_router = common::router_with(&emu, config()).await;
    let second_router = common::router_with(&emu, config()).await;
    let system = "Shared knowledge base article. ".repeat(300);
    let req = |q: &str| {
        GenerateRequest::user(q)
            .family("claude")
            .system(system.clone())
            .task("kb")
            .max_tokens(5)
    };
    // The first replica writes the cache away from the usual first choice.
    let usual = first_router.plan(&req("a")).unwrap().attempts[0]
        .target
        .clone();
    emu.add_fault(
        Fault::new(FaultKind::Outage)
            .for_region(usual.region())
            .times(1),
    );
    let first = first_router.generate(req("a")).await.unwrap();
    assert_ne!(first.decision.region, usual.region());
    assert!(first.usage.cache_write_tokens > 0, "{:?}", first.usage);
    // Published off the call's path: wait for the write to complete.
    common::poll_until("the first replica published its prefix", || {
        first_router.metrics().shared.unwrap().prefixes_published >= 1
    })
    .await;

    // The second replica has never seen the prefix; the fleet's index sends it there.
    assert_eq!(
        second_router.plan(&req("b")).unwrap().attempts[0]
            .target
            .region(),
        usual.region(),
        "on its own it would go to the usual region"
    );
    let second = second_router.generate(req("b")).await.unwrap();
    assert_eq!(second.decision.region, first.decision.region);
    assert!(
        second
            .decision
            .reasons
            .iter()
            .any(|r| matches!(r, laneway::Reason::CacheAffinity { won: true, .. }))
    );
    assert!(second.usage.cache_read_tokens > 0, "{:?}", second.usage);
    emu.shutdown().await;
}

/// A replica whose own breaker is open keeps to its own probe when Redis comes back empty: a
/// missing entry is not another replica's successful probe, so it must not close the breaker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_restart_does_not_close_a_local_breaker_without_a_probe() {
    let mut redis = RedisServer::start();
    let emu = common::emulator().await;
    let config = format!(
        // (The region's ejection, which the same failures would trigger, is off: this is about
        // the target's breaker.)
        "[routing.breaker]\nfailure_threshold = 3\nopen_for = 300.0\nhalf_open_probes = 1\n\
         [routing.outlier]\nenabled = false\n\
         [shared]\nredis_url = \"{}\"\nkey_prefix = \"restart\"\ntimeout = 50.0\nsync_interval = 50.0\n",
        redis.url()
    );
    let router = common::router_with(&emu, common::config(&config)).await;
    // Requests to the target whose breaker opens: the model's own id in us-east-1 (its
    // profile there has a breaker of its own).
    let east = |emu: &Emulator| -> u64 {
        emu.counters()
            .iter()
            .filter(|r| r.region == "us-east-1" && r.target == LITE)
            .map(|r| r.counter.requests)
            .sum()
    };
    let req = || {
        GenerateRequest::user("hi")
            .model(LITE)
            .max_tokens(4)
            .deadline(Duration::from_secs(10))
    };
    emu.add_fault(Fault::new(FaultKind::Outage).for_region("us-east-1"));
    // Three failures on us-east-1 open its breaker (each call is served elsewhere).
    for _ in 0..3 {
        router.generate(req()).await.unwrap();
    }
    assert_eq!(east(&emu), 3);
    redis.kill();
    redis.restart();
    // Wait (bounded) for what the check needs, not for a fixed time: two reads of the empty
    // Redis's breakers, and the breaker's open period over (the plan no longer demotes the
    // target as open). Redis is a real server here, so only its events can be waited on.
    let synced = router.metrics().shared.unwrap().breaker_syncs;
    let ready = || {
        let status = router.metrics().shared.unwrap();
        let open = router.plan(&req()).unwrap().reasons.iter().any(|r| {
            matches!(r, laneway::Reason::TargetDemoted { target, region, health: laneway::BreakerView::Open, .. }
                if &**target == LITE && &**region == "us-east-1")
        });
        !status.degraded && status.breaker_syncs >= synced + 2 && !open
    };
    common::poll_until("the router caught up with the restarted Redis", ready).await;
    for _ in 0..3 {
        router.generate(req()).await.unwrap();
    }
    // One probe, which failed and re-opened the breaker; not three calls through a breaker
    // closed because its Redis entry was gone.
    assert_eq!(east(&emu) - 3, 1);
    emu.shutdown().await;
}

/// Two routers (two replicas of a service) on one Nova Lite quota of 150 tokens a minute per
/// target, where a minute lasts a minute: the second router's call goes to a target with room
/// when they share state, and meets a 429 when each counts only its own admissions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_count_their_admissions_against_one_quota_through_redis() {
    let redis = RedisServer::start();
    let world = || common::real_minute_emulator(LITE, |m| m.performance.tokens_per_minute = 150);
    let quota = format!(
        "[models.\"{LITE}\"]\nquota = {{ tokens_per_minute = 150, profile_tokens_per_minute = 150 }}\n"
    );
    let shared = |prefix: &str| {
        format!(
            "{quota}[shared]\nredis_url = \"{}\"\nkey_prefix = \"{prefix}\"\nreplicas = 2\ntimeout = 200.0\n",
            redis.url()
        )
    };
    let ask = |i: usize| {
        GenerateRequest::user(format!("Summarise ticket {i}"))
            .model(LITE)
            .max_tokens(100)
    };

    let emu = world().await;
    let a = common::router_with(&emu, common::config(&shared("quota-fleet"))).await;
    let b = common::router_with(&emu, common::config(&shared("quota-fleet"))).await;
    let first = a.generate(ask(1)).await.unwrap();
    let second = b.generate(ask(2)).await.unwrap();
    assert!(
        second.decision.failed_attempts.is_empty(),
        "{:?}",
        second.decision.failed_attempts
    );
    assert_ne!(
        (&second.decision.target, &second.decision.region),
        (&first.decision.target, &first.decision.region)
    );
    emu.shutdown().await;

    let emu = world().await;
    let a = common::router_with(&emu, common::config(&quota)).await;
    let b = common::router_with(&emu, common::config(&quota)).await;
    a.generate(ask(1)).await.unwrap();
    let second = b.generate(ask(2)).await.unwrap();
    assert_eq!(
        second.decision.failed_attempts[0].kind,
        laneway::ErrorKind::Throttled,
        "alone, the second replica learns of the full quota from a 429"
    );
    emu.shutdown().await;
}

/// `[shared]` on a three-master Redis Cluster, pointed at a node that does not serve the
/// router's slot: the client follows the cluster, fleet state is written there, and a node
/// failing mid-run (the one serving the slot) costs no call: the router says it is degraded
/// while the slot is unavailable and resumes when it is back. A client not told about the
/// cluster stays degraded (MOVED), rather than reading healthy between failures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_state_lives_on_a_redis_cluster_and_a_node_failing_mid_run_loses_nothing() {
    let mut cluster = RedisCluster::start(3);
    let owner = cluster.owner_of("{cluster}:probe");
    let other = (owner + 1) % cluster.nodes.len();
    let emu = common::emulator().await;
    let seed = cluster.nodes[other].url();
    let config = |cluster_mode: bool| {
        format!(
            "[models.\"{LITE}\"]\nquota = {{ tokens_per_minute = 100000000, profile_tokens_per_minute = 100000000 }}\n\
             [shared]\nredis_url = \"{seed}\"\nkey_prefix = \"cluster\"\ntimeout = 200.0\nsync_interval = 50.0\ncluster = {cluster_mode}\n"
        )
    };
    let ask = |i: usize| {
        GenerateRequest::user(format!("Summarise ticket {i}"))
            .model(LITE)
            .max_tokens(20)
    };
    let router = common::router_with(&emu, common::config(&config(true))).await;
    for i in 0..10 {
        router.generate(ask(i)).await.unwrap();
    }
    let status = router.metrics().shared.unwrap();
    assert!(
        !status.degraded && status.degraded_episodes == 0 && status.admissions >= 10,
        "{status:?}"
    );
    let keys = cluster.nodes[owner].command(&["keys", "{cluster}:*"]);
    assert!(
        keys.contains("{cluster}:"),
        "no fleet keys on the slot's node: {keys:?}"
    );

    // The node serving the slot dies mid-run: every call is still answered, from local state,
    // and the status says so while it lasts.
    cluster.nodes[owner].kill();
    for i in 10..20 {
        router.generate(ask(i)).await.unwrap();
    }
    let down = router.metrics().shared.unwrap();
    assert!(down.degraded && down.degraded_episodes >= 1, "{down:?}");
    // Back: the router finds it again by itself and shares state again.
    cluster.nodes[owner].restart();
    cluster.wait_ok();
    common::poll_until("the router used the cluster again", || {
        !router.metrics().shared.unwrap().degraded
    })
    .await;
    for i in 20..25 {
        router.generate(ask(i)).await.unwrap();
    }
    let back = router.metrics().shared.unwrap();
    assert!(
        !back.degraded && back.admissions > down.admissions,
        "{back:?}"
    );

    // A client not told about the cluster: answered MOVED, it stays degraded (and says why in
    // a warning) instead of flapping back to healthy between failures.
    let plain = common::router_with(&emu, common::config(&config(false))).await;
    for i in 0..5 {
        plain.generate(ask(i)).await.unwrap();
    }
    let moved = plain.metrics().shared.unwrap();
    assert!(moved.degraded && moved.admissions == 0, "{moved:?}");
    emu.shutdown().await;
}

/// The slots of the target three replicas burst on.
const CAPACITY: u32 = 8;

/// What a burst of three replicas on one target met.
struct Burst {
    /// Throttles the emulator answered.
    throttles: u64,
    /// Calls that failed (their budget spent on throttles), and the first failure.
    failed: usize,
    first_failure: Option<String>,
    /// Lease round trips calls waited for.
    round_trips: u64,
    /// Times a replica found Redis unreachable (it then admits from its own limit: a fleet
    /// that degrades learns alone).
    degraded: u64,
}

/// Three replicas in one process, each bursting `calls` at once on one Nova Micro target of
/// `CAPACITY` slots (its in-region id in us-east-1); with `redis_url`, sharing the target's
/// slots through it.
async fn three_replicas_burst_on_one_target(redis_url: Option<&str>, calls: usize) -> Burst {
    // Calls of 300 ms: the waves overlap the same way when both cores are busy.
    let emu = common::small_capacity_world_at(&["amazon.nova-micro-v1:0"], CAPACITY, 1.0).await;
    let shared = redis_url.map_or(String::new(), |url| {
        format!("[shared]\nredis_url = \"{url}\"\nkey_prefix = \"conc\"\nreplicas = 3\ntimeout = 200.0\nsync_interval = 100.0\n")
    });
    let mut routers = Vec::new();
    for _ in 0..3 {
        routers.push(common::router_with(&emu, common::config(&shared)).await);
    }
    let call = |router: &Router, i: usize| {
        let req = GenerateRequest::user(format!("fleet call {i}"))
            .model("amazon.nova-micro-v1:0")
            .residency(laneway::Residency::Regions(vec!["us-east-1".into()]))
            .max_tokens(20);
        let router = router.clone();
        async move { router.generate(req).await }
    };
    let results = futures::future::join_all(
        routers
            .iter()
            .flat_map(|r| (0..calls).map(move |i| call(r, i))),
    )
    .await;
    let failures: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    let burst = Burst {
        throttles: common::throttles_seen(&emu),
        failed: failures.len(),
        first_failure: failures.first().map(|e| format!("{e:?}")),
        round_trips: routers
            .iter()
            .map(|r| r.metrics().shared.map_or(0, |s| s.lease_waits))
            .sum(),
        degraded: routers
            .iter()
            .map(|r| r.metrics().shared.map_or(0, |s| s.degraded_episodes))
            .sum(),
    };
    emu.shutdown().await;
    burst
}

/// Three replicas sharing a target's slots through Redis learn its capacity once, as a fleet:
/// far fewer throttles than three replicas each learning alone (each starting at the initial
/// limit, so the first wave is three times too large), every call answered, and calls wait
/// for few Redis round trips: a replica leases a block of slots (half its fair share of the
/// limit) at a time, and asks again on a call's path only when its block is spent and the
/// fleet had more to give at its last ask; renewals run off the calls' path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_a_targets_slots_and_learn_its_capacity_once() {
    const CALLS: usize = 32;
    let redis = RedisServer::start();
    let alone = three_replicas_burst_on_one_target(None, CALLS).await;
    let fleet = three_replicas_burst_on_one_target(Some(&redis.url()), CALLS).await;
    let (round_trips, degraded) = (fleet.round_trips, fleet.degraded);
    println!(
        "3 x {CALLS} calls on 8 slots: {} throttles and {} failed calls alone, {} throttles as a fleet ({round_trips} lease round trips, {degraded} degraded episodes)",
        alone.throttles, alone.failed, fleet.throttles
    );
    // Alone, a burst three times a target's capacity may spend some calls' budgets on
    // throttles; as a fleet, none.
    assert!(
        fleet.failed == 0,
        "{} failed as a fleet: {:?}",
        fleet.failed,
        fleet.first_failure
    );
    // Slow start at most doubles the limit per round, so the wave that first passes the
    // target's capacity overshoots by at most its capacity, and the lesson reaches the fleet
    // before the wave after: two capacities of throttles at most, and fewer than alone.
    assert!(
        fleet.throttles <= 2 * u64::from(CAPACITY) && fleet.throttles < alone.throttles,
        "a fleet learns once: {} throttles against {} alone ({round_trips} lease round trips, {degraded} degraded episodes)",
        fleet.throttles,
        alone.throttles
    );
    assert!(
        round_trips * 2 <= (3 * CALLS) as u64,
        "calls waited for {round_trips} lease round trips, {} calls",
        3 * CALLS
    );
}

/// A throttle's lesson reaches the fleet corrected by what the other replicas hold now: a
/// replica that leased first counts no others, and taught alone it would bring the fleet's
/// limit to its own few slots (after which every replica's floor of one slot overfilled the
/// target and its calls met a storm of throttles).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lesson_counts_the_slots_the_others_hold_now_not_when_the_teacher_last_looked() {
    use laneway::state::shared::{LeaseAsk, Lesson, Shared};
    let redis = RedisServer::start();
    let config = common::config(&format!(
        "[shared]\nredis_url = \"{}\"\nkey_prefix = \"lesson\"\nreplicas = 2\n",
        redis.url()
    ))
    .shared
    .unwrap();
    let (first, second) = (Shared::new(&config).unwrap(), Shared::new(&config).unwrap());
    let probe_after = Duration::from_secs(5);
    let ask = |want: u32, in_use: u32| LeaseAsk {
        want,
        in_use,
        limit: 16,
        seq: 1,
    };
    let lease = first
        .lease_slots("us-east-1", "m", ask(4, 0), probe_after, true)
        .await
        .unwrap();
    assert_eq!((lease.granted, lease.others), (4, 0));
    let lease = second
        .lease_slots("us-east-1", "m", ask(10, 0), probe_after, true)
        .await
        .unwrap();
    assert_eq!((lease.granted, lease.limit), (10, 16));
    // The first is throttled with its 4 in flight: alone, it would learn 3; the second holds
    // 10 now, so the fleet learns 13.
    let lesson = Lesson {
        limit: 3,
        others_seen: 0,
    };
    assert_eq!(first.teach("us-east-1", "m", lesson).await, Some(13));
    let seen = second
        .lease_slots("us-east-1", "m", ask(10, 10), probe_after, false)
        .await
        .unwrap();
    assert_eq!(seen.limit, 13);
    assert!(seen.taught_ago.is_some());
}

/// A fresh replica of a warm fleet starts from what the fleet knows: its first calls hedge
/// after the fleet's figures for their targets (not the model's prior), and once a replica has
/// ejected a stalling region, a replica started after never sends there: it never rediscovers
/// the stall. The defaults a user gets, but `[shared]`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_replica_starts_from_the_fleets_latency_and_ejections() {
    const CALLS: usize = FLEET_CALLS;
    let redis = RedisServer::start();
    let emu = common::emulator().await;
    let config = || {
        common::config(&format!(
            "[shared]\nredis_url = \"{}\"\nkey_prefix = \"fleet-latency\"\n",
            redis.url()
        ))
    };
    // The fleet warms up: its targets' latency is published.
    let warm = common::router_with(&emu, config()).await;
    assert!(fleet_calls(&warm).await.iter().all(Result::is_ok));
    common::poll_until("the warm replica published its targets' latency", || {
        warm.metrics().shared.unwrap().latency_published >= 1
    })
    .await;

    // us-east-1 begins to stall. A new replica's first calls hedge after the fleet's figures
    // for us-east-1 (tens of milliseconds here), not the model's 2.5 s prior.
    let stall = emu.add_fault(Fault::new(FaultKind::Stall).for_region("us-east-1"));
    let fresh = common::router_with(&emu, config()).await;
    let prior = fresh_prior();
    let started = tokio::time::Instant::now();
    let answered = fleet_calls(&fresh).await;
    println!(
        "a new replica of a warm fleet, us-east-1 stalling: {CALLS} calls in {:?}, the slowest {:?}",
        started.elapsed(),
        slowest(&answered)
    );
    // The hedges of calls whose first attempt went to the target the fleet knows (Nova Lite's
    // bare id in us-east-1). A call that found every planned target full while this
    // replica's lease of their slots was on its way overflowed to a profile the fleet never
    // called, and starts from the prior there.
    let hedges: Vec<Duration> = answered
        .iter()
        .map(|r| r.as_ref().expect("every call answered"))
        .filter(|r| {
            let reasons = &r.decision.reasons;
            reasons.iter().any(|x| {
                matches!(x, laneway::Reason::TargetsOrdered { first, region, .. }
                    if &**first == LITE && &**region == "us-east-1")
            }) && !reasons
                .iter()
                .any(|x| matches!(x, laneway::Reason::Overflowed { .. }))
        })
        .filter_map(|r| r.decision.hedge.as_ref().map(|h| h.delay))
        .collect();
    assert!(!hedges.is_empty(), "the stall was hedged");
    assert!(
        hedges.iter().all(|d| *d < prior),
        "hedged after the fleet's figures, not the prior's {prior:?}: {hedges:?}"
    );
    // That replica ejected us-east-1, and the fleet knows it.
    assert!(
        answered.iter().flatten().any(|r| r
            .decision
            .reasons
            .iter()
            .any(|x| matches!(x, laneway::Reason::RegionEjected { .. }))),
        "the stall ejected us-east-1"
    );
    // The ejection's write (off the call's path) has reached Redis.
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let published = async {
        loop {
            let there: bool = redis::cmd("HEXISTS")
                .arg("{fleet-latency}:ejected")
                .arg("us-east-1")
                .query_async(&mut conn)
                .await
                .unwrap();
            if there {
                return;
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), published)
        .await
        .expect("the ejection was published");

    // A replica started now never sends to us-east-1: not one call pays the stall (its
    // hedges, when a healthy region is slow to answer on a busy machine, go elsewhere too).
    let sent_east = || -> u64 {
        emu.counters()
            .iter()
            .filter(|r| r.region == "us-east-1")
            .map(|r| r.counter.requests)
            .sum()
    };
    let east_before = sent_east();
    let newest = common::router_with(&emu, config()).await;
    let started = tokio::time::Instant::now();
    let answered = fleet_calls(&newest).await;
    println!(
        "a new replica after the fleet ejected us-east-1: {CALLS} calls in {:?}, the slowest {:?}",
        started.elapsed(),
        slowest(&answered)
    );
    for r in &answered {
        let r = r.as_ref().expect("every call answered");
        assert!(
            r.decision.failed_attempts.is_empty(),
            "{:?}",
            r.decision.failed_attempts
        );
        assert_ne!(r.decision.region, "us-east-1");
    }
    assert_eq!(sent_east(), east_before, "a request reached us-east-1");
    emu.remove_fault(stall);
    emu.shutdown().await;
}

/// Calls of each fleet row, and how many of them in flight.
const FLEET_CALLS: usize = 40;
const FLEET_IN_FLIGHT: usize = 8;

/// `FLEET_CALLS` standard calls of Nova Lite, `FLEET_IN_FLIGHT` at once, through `router`.
async fn fleet_calls(router: &Router) -> Vec<laneway::Result<laneway::GenerateResponse>> {
    futures::stream::iter(0..FLEET_CALLS)
        .map(|i| {
            let router = router.clone();
            async move {
                router
                    .generate(
                        GenerateRequest::user(format!("Request {i}: a short paragraph."))
                            .model(LITE)
                            .max_tokens(100),
                    )
                    .await
            }
        })
        .buffer_unordered(FLEET_IN_FLIGHT)
        .collect()
        .await
}

/// The fault matrix's other rows on a new replica of a warm fleet (each fault its own fleet,
/// warmed by another replica first): silence after the headers, silence mid-answer and a
/// trickle. Every call is answered, the slowest within 5 s of the fault-free p99 plus the
/// prior's hedge delay, none paying the class's 30 s ceiling.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_replica_of_a_warm_fleet_pays_seconds_for_silence_and_trickles() {
    let redis = RedisServer::start();
    let emu = common::emulator().await;
    let config = |prefix: &str| {
        common::config(&format!(
            "[shared]\nredis_url = \"{}\"\nkey_prefix = \"{prefix}\"\n",
            redis.url()
        ))
    };
    let mut trickle = Fault::new(FaultKind::Trickle).after(20);
    trickle.delay_ms = Some(2_000);
    let rows = [
        (
            "silent-after-headers",
            Fault::new(FaultKind::StallAfterHeaders),
        ),
        (
            "silent-mid-answer",
            Fault::new(FaultKind::StallMidStream).after(20),
        ),
        ("trickle", trickle),
    ];
    for (name, fault) in rows {
        let warm = common::router_with(&emu, config(name)).await;
        let fault_free = fleet_calls(&warm).await;
        assert!(fault_free.iter().all(Result::is_ok));
        let p99 = slowest(&fault_free);
        common::poll_until("the warm replica published its targets' latency", || {
            warm.metrics().shared.unwrap().latency_published >= 1
        })
        .await;
        let id = emu.add_fault(fault.for_region("us-east-1"));
        let fresh = common::router_with(&emu, config(name)).await;
        let answered = fleet_calls(&fresh).await;
        emu.remove_fault(id);
        let failed: Vec<_> = answered.iter().filter_map(|r| r.as_ref().err()).collect();
        assert!(failed.is_empty(), "{name}: {failed:?}");
        let worst = slowest(&answered);
        println!(
            "a new replica of a warm fleet, {name} in us-east-1: the slowest of 40 calls {worst:?} (fault-free p99 {p99:?})"
        );
        assert!(
            worst <= p99 + fresh_prior() + Duration::from_secs(5),
            "{name}: the slowest call took {worst:?}"
        );
        assert!(worst < Duration::from_secs(30), "{name}: {worst:?}");
    }
    emu.shutdown().await;
}

/// The slowest of the answered calls (their own total times).
fn slowest(answered: &[laneway::Result<laneway::GenerateResponse>]) -> Duration {
    answered
        .iter()
        .flatten()
        .map(|r| r.timings.total)
        .max()
        .unwrap_or_default()
}

/// Nova Lite's prior to the first token at standard, the hedge delay of a cold target.
fn fresh_prior() -> Duration {
    laneway::Config::default()
        .latency_prior(
            LITE,
            Some(laneway::ServiceTier::STANDARD),
            laneway::Api::Converse,
        )
        .ttft_p99
}

/// A target's figure in the fleet is its best-informed replica's: a replica that has seen the
/// target twice (a new one, whose first attempts there stalled) does not overwrite what
/// another learnt from two hundred answers, and no replica reads its own figures back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fleets_figure_for_a_target_is_its_best_informed_replicas() {
    use laneway::state::LatencySummary;
    use laneway::state::shared::Shared;
    let redis = RedisServer::start();
    let config = common::config(&format!(
        "[shared]\nredis_url = \"{}\"\nkey_prefix = \"best-informed\"\n",
        redis.url()
    ))
    .shared
    .unwrap();
    let replicas: Vec<_> = (0..3)
        .map(|_| std::sync::Arc::new(Shared::new(&config).unwrap()))
        .collect();
    let now = laneway::state::shared::unix_ms();
    let summary = |first_token_ms, hedge_ms, samples| LatencySummary {
        first_token_ms,
        hedge_ms,
        gap_ms: None,
        samples,
        at_ms: now,
    };
    let target = "us-east-1|amazon.nova-lite-v1:0|standard".to_string();
    let warm = summary(40, Some(45), 200);
    replicas[0].publish_latency(&[(target.clone(), warm)]);
    common::poll_until("the warm replica's figures are in Redis", || {
        replicas[0].status().latency_published >= 1
    })
    .await;
    // Later, a new replica publishes what little it saw: two stalls, no first token.
    let mut newer = summary(1_250, None, 2);
    newer.at_ms = now + 1;
    replicas[1].publish_latency(&[(target.clone(), newer)]);
    common::poll_until("the new replica's figures are in Redis", || {
        replicas[1].status().latency_published >= 1
    })
    .await;
    let within = Duration::from_secs(2);
    let read = replicas[2].read_fleet(within).await.unwrap();
    assert_eq!(read.latency, [(target.clone(), warm)]);
    // The new replica reads the warm one's, not its own.
    let read = replicas[1].read_fleet(within).await.unwrap();
    assert_eq!(read.latency, [(target.clone(), warm)]);
    // The warm one has nothing to learn but the new one's.
    let read = replicas[0].read_fleet(within).await.unwrap();
    assert_eq!(read.latency, [(target.clone(), newer)]);
    // A field of a replica from before figures were published per replica (a rolling
    // upgrade) is not a malformed value: its writer cannot be told apart, so it is removed.
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let key = "{best-informed}:latency";
    let _: () = redis::cmd("HSET")
        .arg(key)
        .arg(&target)
        .arg(serde_json::to_string(&summary(10, None, 900)).unwrap())
        .query_async(&mut conn)
        .await
        .unwrap();
    let read = replicas[2].read_fleet(within).await.unwrap();
    assert_eq!(read.latency, [(target.clone(), warm)]);
    assert_eq!(replicas[2].status().malformed_values, 0);
    common::poll_until("the old writer's field is removed", || {
        let mut sync = client.get_connection().unwrap();
        !redis::cmd("HEXISTS")
            .arg(key)
            .arg(&target)
            .query::<bool>(&mut sync)
            .unwrap()
    })
    .await;
}
