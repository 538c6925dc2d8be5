"""The batch lane from Python against the emulator's S3 and batch jobs: a session, progress,
results in order, a handle resumed from JSON, cancelling, small submissions on flex, and a
progress callback that raises."""

import json

import pytest

import laneway

BATCH = {"batch": {"bucket": "lw-batch", "role_arn": "arn:aws:iam::123456789012:role/laneway-batch", "max_records_per_job": 120, "poll_interval": 20.0}}


def prompt(i):
    # Request i asks with i % 20 + 1 filler words: its input size identifies it.
    return "summarise: " + "note " * (i % 20 + 1)


@pytest.fixture
def batch_router(emulator):
    return laneway.Router(BATCH, **emulator.router_kwargs())


async def test_a_session_waits_with_progress_and_reads_results_in_order(batch_router):
    session = batch_router.batch_session()
    for i in range(250):
        assert session.push(prompt(i), model="amazon.nova-lite-v1:0", max_tokens=12, slo="batch") == i
    assert len(session) == 250
    handle = await session.submit()
    assert isinstance(handle, laneway.BatchHandle)
    # 120 records a job at most and 100 at least: two full jobs; the 10 left over cannot make
    # a job of their own and are answered on flex.
    assert len(handle.job_arns) == 2
    seen = []
    status = await batch_router.wait_batch(handle, seen.append)
    assert status["finished"] and status["done"] == status["total"] == 2
    assert seen and seen[-1]["done"] == 2 and all(isinstance(s["jobs"], list) for s in seen)
    items = await batch_router.batch_results(handle)
    assert len(items) == 250
    outputs = [item["output"] for item in items]
    assert [o["lane"] for o in outputs] == ["batch"] * 240 + ["flex"] * 10
    assert all("left over" in o["diverted"] for o in outputs[240:])
    assert all(o["text"] and 0 < o["usage"]["output_tokens"] <= 12 and o["cost_usd"] > 0 for o in outputs)
    # Same filler length, same input size: each answer is in its request's place.
    assert all(outputs[i]["usage"]["input_tokens"] == outputs[i - 20]["usage"]["input_tokens"] for i in range(20, 250))
    assert outputs[19]["usage"]["input_tokens"] > outputs[0]["usage"]["input_tokens"]
    with pytest.raises(laneway.InvalidRequestError, match="submitted"):
        session.push(prompt(0), model="amazon.nova-lite-v1:0", slo="batch")


def test_a_handle_resumes_from_json_in_another_router(batch_router, emulator):
    handle = batch_router.submit_batch_sync([laneway.Request(prompt=prompt(i), model="amazon.nova-lite-v1:0", max_tokens=8, slo="batch") for i in range(120)])
    text = handle.to_json()
    assert json.loads(text)["jobs"]
    other = laneway.Router(BATCH, **emulator.router_kwargs())
    resumed = laneway.BatchHandle.from_json(text)
    assert resumed.job_arns == handle.job_arns
    other.wait_batch_sync(resumed)
    assert other.batch_status_sync(resumed)["finished"]
    items = other.batch_results_sync(resumed)
    assert len(items) == 120 and all("output" in item for item in items)
    with pytest.raises(laneway.ConfigError, match="batch handle"):
        laneway.BatchHandle.from_json("{not json")


def test_a_small_batch_is_answered_on_flex_and_says_why(batch_router):
    handle = batch_router.submit_batch_sync([{"messages": [{"role": "user", "content": [{"text": prompt(i)}]}], "model": {"model": "amazon.nova-lite-v1:0"}, "slo": {"class": "batch"}, "inference": {"max_tokens": 8}} for i in range(3)])
    assert handle.job_arns == []
    items = batch_router.batch_results_sync(handle)
    assert [item["output"]["lane"] for item in items] == ["flex"] * 3
    assert all(item["output"]["diverted"] for item in items)


def test_a_batch_is_cancelled(batch_router):
    handle = batch_router.submit_batch_sync([laneway.Request(prompt=prompt(i), model="amazon.nova-lite-v1:0", max_tokens=8, slo="batch") for i in range(150)])
    stopped = batch_router.cancel_batch_sync(handle)
    status = batch_router.wait_batch_sync(handle)
    assert status["finished"]
    states = {job["status"] for job in status["jobs"]}
    # A job that ended on its own before the stop is not counted.
    assert stopped == sum(job["status"] == "Stopped" for job in status["jobs"]), states


async def test_an_exception_in_the_progress_callback_ends_the_wait(batch_router):
    handle = await batch_router.submit_batch([laneway.Request(prompt=prompt(i), model="amazon.nova-lite-v1:0", max_tokens=8, slo="batch") for i in range(100)])

    class Stop(Exception):
        pass

    def progress(status):
        raise Stop(status["total"])

    with pytest.raises(Stop):
        await batch_router.wait_batch(handle, progress)
    with pytest.raises(Stop):
        batch_router.wait_batch_sync(handle, progress)


def test_batch_requests_need_the_batch_class_and_the_section(batch_router, router):
    session = batch_router.batch_session()
    with pytest.raises(laneway.InvalidRequestError, match="slo.class"):
        session.push(prompt(0), model="amazon.nova-lite-v1:0")
    with pytest.raises(laneway.ConfigError, match="batch"):
        router.submit_batch_sync([laneway.Request(prompt="x", model="amazon.nova-lite-v1:0", slo="batch")])
