//! The batch lane through the router against the emulator's S3 and batch jobs: a 1,000-request
//! batch split into jobs and read back in order, failed records, a resumed handle, and small or
//! urgent submissions diverted to flex.

use crate::common;

use std::time::Duration;

use laneway::batch::{BatchErrorKind, BatchHandle, BatchLane};
use laneway::{GenerateRequest, Slo, SloClass};
use laneway_emulator::{Fault, FaultKind};

const LITE: &str = "amazon.nova-lite-v1:0";
const BATCH: &str = "[batch]\nbucket = \"lw-batch\"\nrole_arn = \"arn:aws:iam::123456789012:role/laneway-batch\"\nmax_records_per_job = 400\npoll_interval = 50.0\n";

/// Request `i` asks with `i % 40 + 1` filler words, so its input size identifies it.
fn request(i: usize) -> GenerateRequest {
    GenerateRequest::user(format!("summarise: {}", "note ".repeat(i % 40 + 1)))
        .model(LITE)
        .max_tokens(20)
        .slo_class(SloClass::Batch)
}

#[tokio::test]
async fn a_thousand_requests_come_back_in_order_with_usage_and_cost() {
    let emu = common::emulator().await;
    let router = common::router_with(&emu, common::config(BATCH)).await;
    let requests: Vec<GenerateRequest> = (0..1000).map(request).collect();
    let handle = router.submit_batch(requests).await.unwrap();
    assert_eq!(
        handle.jobs.len(),
        3,
        "1,000 records at most 400 a job, evenly"
    );
    assert_eq!(
        handle
            .jobs
            .iter()
            .map(|j| j.indices.len())
            .collect::<Vec<_>>(),
        [334, 333, 333]
    );
    let mut seen = Vec::new();
    let status = router
        .wait_batch(&handle, |s| seen.push(s.progress()))
        .await
        .unwrap();
    assert!(
        status.finished() && status.jobs.iter().all(|j| j.status == "Completed"),
        "{status:?}"
    );
    assert_eq!(seen.last(), Some(&(3, 3)));

    let items = router.batch_results(&handle).await.unwrap();
    assert_eq!(items.len(), 1000);
    let price = common::config("").models[LITE].price().clone();
    for (i, item) in items.iter().enumerate() {
        let out = item.as_ref().unwrap();
        assert_eq!(out.lane, BatchLane::Batch);
        assert!(
            !out.text.is_empty() && out.usage.output_tokens > 0 && out.usage.output_tokens <= 20
        );
        let on_demand = f64::from(out.usage.input_tokens) * price.input_per_1k / 1000.0
            + f64::from(out.usage.output_tokens) * price.output_per_1k / 1000.0;
        assert!(
            (out.cost_usd - on_demand * 0.5).abs() < 1e-12,
            "half price: {out:?}"
        );
        // Same filler length, same input size: the answers are matched to their requests.
        if i >= 40 {
            assert_eq!(
                out.usage.input_tokens,
                items[i - 40].as_ref().unwrap().usage.input_tokens
            );
        }
    }
    assert!(
        items[39].as_ref().unwrap().usage.input_tokens
            > items[0].as_ref().unwrap().usage.input_tokens
    );
    let c = router.batch_cost_comparison(&items);
    assert!((c.batch_usd - c.standard_usd * 0.5).abs() < 1e-9, "{c:?}");
    assert!(c.flex_usd > 0.0);
    let served: u64 = emu
        .counters()
        .iter()
        .filter(|c| c.tier == "batch")
        .map(|c| c.counter.requests)
        .sum();
    assert_eq!(served, 1000);
    emu.shutdown().await;
}

#[tokio::test]
async fn failed_records_come_back_as_typed_errors_in_their_place() {
    let emu = common::emulator().await;
    let router = common::router_with(&emu, common::config(BATCH)).await;
    emu.add_fault(
        Fault::new(FaultKind::InternalError)
            .for_tier("batch")
            .times(4),
    );
    let handle = router
        .submit_batch((0..150).map(request).collect())
        .await
        .unwrap();
    router.wait_batch(&handle, |_| {}).await.unwrap();
    let items = router.batch_results(&handle).await.unwrap();
    let failed: Vec<usize> = (0..150).filter(|i| items[*i].is_err()).collect();
    assert_eq!(failed.len(), 4, "no record dropped, none invented");
    let e = items[failed[0]].as_ref().unwrap_err();
    assert_eq!(e.kind, BatchErrorKind::RecordFailed);
    assert_eq!(e.code.as_deref(), Some("500"));
    assert!(e.message.contains("InternalServerException"), "{e}");
    emu.shutdown().await;
}

/// The submitting process: this test binary again, started by the test below; it submits,
/// prints the handle and exits without waiting.
#[tokio::test]
#[ignore = "the submitting process of a_handle_is_resumed_after_the_submitting_process_exits"]
async fn submitting_process() {
    let url = std::env::var("LANEWAY_TEST_EMULATOR").expect("started by a test");
    let router = laneway::Router::builder()
        .config(common::config(BATCH))
        .endpoint_url(url)
        .static_credentials(
            laneway_emulator::TEST_ACCESS_KEY_ID,
            laneway_emulator::TEST_SECRET_ACCESS_KEY,
        )
        .build()
        .await
        .unwrap();
    let handle = router
        .submit_batch((0..130).map(request).collect())
        .await
        .unwrap();
    println!("HANDLE {}", handle.to_json());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handle_is_resumed_after_the_submitting_process_exits() {
    let emu = common::emulator().await;
    let url = emu.url();
    // The emulator runs on this process's runtime: wait for the child off its threads.
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "batch_lane::submitting_process",
                "--nocapture",
                "--quiet",
            ])
            .env("LANEWAY_TEST_EMULATOR", url)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json = stdout
        .lines()
        .find_map(|l| l.strip_prefix("HANDLE "))
        .expect("the submitter printed its handle");
    let handle = BatchHandle::from_json(json).unwrap();
    let router = common::router_with(&emu, common::config(BATCH)).await;
    router.wait_batch(&handle, |_| {}).await.unwrap();
    let items = router.batch_results(&handle).await.unwrap();
    assert_eq!(items.iter().filter(|i| i.is_ok()).count(), 130);
    let answered: u64 = emu
        .counters()
        .iter()
        .filter(|c| c.tier == "batch")
        .map(|c| c.counter.requests)
        .sum();
    assert_eq!(answered, 130, "nothing submitted twice");
    emu.shutdown().await;
}

#[tokio::test]
async fn a_batch_can_be_stopped() {
    // Real time: the job's stages take 200 ms, so the stop lands while it runs (at the fast
    // scale they take 2 ms and the job may end first).
    let emu =
        laneway_emulator::Emulator::start(laneway_emulator::Scenario::builtin("startup").unwrap())
            .await
            .unwrap();
    let router = common::router_with(&emu, common::config(BATCH)).await;
    let handle = router
        .submit_batch((0..110).map(request).collect())
        .await
        .unwrap();
    assert_eq!(router.cancel_batch(&handle).await.unwrap(), 1);
    let status = router.wait_batch(&handle, |_| {}).await.unwrap();
    assert_eq!(status.jobs[0].status, "Stopped");
    // Whatever the job answered before it stopped comes back; the rest is named missing.
    let items = router.batch_results(&handle).await.unwrap();
    assert_eq!(items.len(), 110);
    assert!(items.iter().all(|i| match i {
        Ok(_) => true,
        Err(e) => e.kind == BatchErrorKind::Missing && e.message.contains("Stopped"),
    }));
    assert_eq!(
        router.cancel_batch(&handle).await.unwrap(),
        0,
        "nothing left to stop"
    );
    emu.shutdown().await;
}

#[tokio::test]
async fn a_serialised_handle_is_resumed_by_a_fresh_router() {
    let emu = common::emulator().await;
    let json = {
        let submitter = common::router_with(&emu, common::config(BATCH)).await;
        submitter
            .submit_batch((0..120).map(request).collect())
            .await
            .unwrap()
            .to_json()
        // The submitting router is gone here.
    };
    let resumed = BatchHandle::from_json(&json).unwrap();
    let router = common::router_with(&emu, common::config(BATCH)).await;
    router.wait_batch(&resumed, |_| {}).await.unwrap();
    let items = router.batch_results(&resumed).await.unwrap();
    assert_eq!(items.iter().filter(|i| i.is_ok()).count(), 120);
    // Nothing was submitted twice.
    let jobs_inputs: u64 = emu
        .counters()
        .iter()
        .filter(|c| c.tier == "batch")
        .map(|c| c.counter.requests)
        .sum();
    assert_eq!(jobs_inputs, 120);
    emu.shutdown().await;
}

#[tokio::test]
async fn small_or_urgent_submissions_go_to_flex_and_say_why() {
    let emu = common::emulator().await;
    let router = common::router_with(&emu, common::config(BATCH)).await;
    let handle = router
        .submit_batch((0..10).map(request).collect())
        .await
        .unwrap();
    assert!(handle.jobs.is_empty());
    let items = router.batch_results(&handle).await.unwrap();
    for item in &items {
        let out = item.as_ref().unwrap();
        assert_eq!(out.lane, BatchLane::Flex);
        assert!(
            out.diverted
                .as_ref()
                .unwrap()
                .contains("fewer than the batch minimum of 100"),
            "{out:?}"
        );
    }
    let flex: u64 = emu
        .counters()
        .iter()
        .filter(|c| c.tier == "flex")
        .map(|c| c.counter.requests)
        .sum();
    assert_eq!(flex, 10);

    // 150 requests, one with a deadline in a minute: 149 to the job, that one to flex.
    let mut requests: Vec<GenerateRequest> = (0..150).map(request).collect();
    requests[7] = request(7).slo(Slo {
        class: SloClass::Batch,
        ttft_target: None,
        deadline: Some(Duration::from_secs(60)),
    });
    let handle = router.submit_batch(requests).await.unwrap();
    assert_eq!(handle.jobs[0].indices.len(), 149);
    router.wait_batch(&handle, |_| {}).await.unwrap();
    let items = router.batch_results(&handle).await.unwrap();
    let urgent = items[7].as_ref().unwrap();
    assert_eq!(urgent.lane, BatchLane::Flex);
    assert!(urgent.diverted.as_ref().unwrap().contains("deadline"));
    assert_eq!(items[8].as_ref().unwrap().lane, BatchLane::Batch);
    emu.shutdown().await;
}

#[tokio::test]
async fn without_batch_configuration_the_error_names_it() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    let e = router.submit_batch(vec![request(0)]).await.unwrap_err();
    assert!(e.to_string().contains("[batch]"), "{e}");
    emu.shutdown().await;
}

#[tokio::test]
async fn a_batch_session_collects_batch_class_requests() {
    let emu = common::emulator().await;
    let router = common::router_with(&emu, common::config(BATCH)).await;
    let mut session = router.batch_session();
    for i in 0..120 {
        assert_eq!(session.push(request(i)).unwrap(), i);
    }
    let e = session
        .push(GenerateRequest::user("now please").slo_class(SloClass::Interactive))
        .unwrap_err();
    assert!(e.to_string().contains("slo.class"), "{e}");
    assert_eq!(session.len(), 120);
    let handle = session.submit().await.unwrap();
    assert_eq!(handle.jobs.len(), 1);
    router.wait_batch(&handle, |_| {}).await.unwrap();
    let items = router.batch_results(&handle).await.unwrap();
    assert!(
        items
            .iter()
            .all(|i| i.as_ref().is_ok_and(|o| o.lane == BatchLane::Batch))
    );
    emu.shutdown().await;
}

/// Control-plane throttles are retried: the submission and the waits go through.
#[tokio::test]
async fn throttled_control_plane_calls_are_retried() {
    let emu = common::emulator().await;
    let router = common::router_with(&emu, common::config(BATCH)).await;
    emu.add_fault(Fault::new(FaultKind::Throttle).for_tier("control").times(3));
    let handle = router
        .submit_batch((0..150).map(request).collect())
        .await
        .unwrap();
    assert_eq!(handle.jobs.len(), 1);
    assert!(handle.not_submitted.is_empty());
    // Status reads throttled too: a throttle no longer aborts the wait.
    emu.add_fault(
        Fault::new(FaultKind::Throttle)
            .for_tier("control")
            .for_model("GetModelInvocationJob")
            .times(2),
    );
    router.wait_batch(&handle, |_| {}).await.unwrap();
    let items = router.batch_results(&handle).await.unwrap();
    assert!(items.iter().all(|i| i.is_ok()));
}

/// A job that cannot be created does not lose the ones that were: the handle covers them and
/// names the requests not submitted, which come back as typed errors in their places.
#[tokio::test]
async fn a_failed_job_creation_keeps_the_jobs_already_created() {
    let emu = common::emulator().await;
    let router = common::router_with(&emu, common::config(BATCH)).await;
    // Two models: Lite's job is created; Micro's creation fails every time.
    emu.add_fault(
        Fault::new(FaultKind::InternalError)
            .for_tier("control")
            .for_model("amazon.nova-micro-v1:0"),
    );
    let requests: Vec<GenerateRequest> = (0..300)
        .map(|i| {
            let r = request(i);
            if i % 2 == 0 {
                r.model("amazon.nova-micro-v1:0")
            } else {
                r
            }
        })
        .collect();
    let handle = router.submit_batch(requests).await.unwrap();
    assert_eq!(handle.jobs.len(), 1, "{handle:?}");
    assert_eq!(handle.not_submitted.len(), 1);
    let ns = &handle.not_submitted[0];
    assert_eq!(ns.model, "amazon.nova-micro-v1:0");
    assert_eq!(ns.indices.len(), 150);
    assert_eq!(ns.kind, laneway::ErrorKind::Internal);
    // The handle survives a round trip with its not-submitted requests.
    let handle = BatchHandle::from_json(&handle.to_json()).unwrap();
    router.wait_batch(&handle, |_| {}).await.unwrap();
    let items = router.batch_results(&handle).await.unwrap();
    for (i, item) in items.iter().enumerate() {
        match item {
            Ok(out) => assert!(i % 2 == 1 && out.model == LITE),
            Err(e) => assert!(
                i % 2 == 0 && e.kind == BatchErrorKind::NotSubmitted,
                "{i}: {e:?}"
            ),
        }
    }
}

/// An output line that is not a JSON record (a damaged file) makes the record it held a typed
/// `unreadable_output` error, not a silent "missing".
#[tokio::test]
async fn unreadable_output_lines_are_typed_errors() {
    let emu = common::emulator().await;
    let router = common::router_with(&emu, common::config(BATCH)).await;
    let handle = router
        .submit_batch((0..120).map(request).collect())
        .await
        .unwrap();
    router.wait_batch(&handle, |_| {}).await.unwrap();

    // Damage the first line of the job's output, with the official S3 client.
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::new()
            .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
            .region(aws_sdk_s3::config::Region::new("us-east-1"))
            .endpoint_url(emu.url())
            .force_path_style(true)
            .credentials_provider(aws_sdk_s3::config::Credentials::new(
                laneway_emulator::TEST_ACCESS_KEY_ID,
                laneway_emulator::TEST_SECRET_ACCESS_KEY,
                None,
                None,
                "test",
            ))
            .build(),
    );
    let rest = handle.jobs[0].output_uri.strip_prefix("s3://").unwrap();
    let (bucket, prefix) = rest.split_once('/').unwrap();
    let listed = s3
        .list_objects_v2()
        .bucket(bucket)
        .prefix(prefix)
        .send()
        .await
        .unwrap();
    let key = listed
        .contents()
        .iter()
        .filter_map(|o| o.key())
        .find(|k| k.ends_with(".jsonl.out"))
        .unwrap()
        .to_string();
    let body = s3
        .get_object()
        .bucket(bucket)
        .key(&key)
        .send()
        .await
        .unwrap();
    let text = String::from_utf8(body.body.collect().await.unwrap().to_vec()).unwrap();
    let (_, rest) = text.split_once('\n').unwrap();
    let damaged = format!("{{\"recordId\": \"000000000\", \"modelOutput\": {{\"content\n{rest}");
    s3.put_object()
        .bucket(bucket)
        .key(&key)
        .body(damaged.into_bytes().into())
        .send()
        .await
        .unwrap();

    let items = router.batch_results(&handle).await.unwrap();
    let errors: Vec<_> = items.iter().filter_map(|i| i.as_ref().err()).collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].kind, BatchErrorKind::UnreadableOutput);
    assert!(errors[0].message.contains("1 line(s) could not be read"));
}

/// Requests diverted to flex are answered in the background: the handle comes back before
/// their (slow) answers, which `batch_results` then collects.
#[tokio::test]
async fn diverted_requests_never_delay_the_handle() {
    let emu = common::emulator().await;
    let router = common::router_with(&emu, common::config(BATCH)).await;
    emu.add_fault(Fault {
        delay_ms: Some(3_000),
        ..Fault::new(FaultKind::SlowFirstToken).for_tier("flex")
    });
    // Ten requests: too few for a job, all diverted. Were the handle to wait for them, it
    // would take their three-second first tokens.
    let handle = tokio::time::timeout(
        Duration::from_millis(1_500),
        router.submit_batch((0..10).map(request).collect()),
    )
    .await
    .expect("the handle does not wait for diverted answers")
    .unwrap();
    assert!(handle.jobs.is_empty());
    assert_eq!(handle.pending_flex, (0..10).collect::<Vec<_>>());
    let items = router.batch_results(&handle).await.unwrap();
    assert!(
        items
            .iter()
            .all(|i| i.as_ref().is_ok_and(|o| o.lane == BatchLane::Flex))
    );
    // Read twice: the answers are kept.
    assert_eq!(router.batch_results(&handle).await.unwrap().len(), 10);
    // Another router resuming the handle cannot have them, and says so.
    let other = common::router_with(&emu, common::config(BATCH)).await;
    let resumed = BatchHandle::from_json(&handle.to_json()).unwrap();
    let items = other.batch_results(&resumed).await.unwrap();
    assert!(items.iter().all(|i| {
        i.as_ref()
            .is_err_and(|e| e.kind == BatchErrorKind::DivertedElsewhere)
    }));
}
