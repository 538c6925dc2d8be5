"""Laneway's logs reach Python's `logging`: the core's warnings under `laneway.<module>`,
structured fields as `extra`, the level taken from the `laneway` logger, a repeated warning
said once with its count."""

import logging

import pytest

import laneway
from laneway import _logs


class Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture
def collected():
    handler = Collect()
    logger = logging.getLogger("laneway")
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(logging.NOTSET)


def degraded_router(emulator, prefix):
    # Redis configured but not there: the shared state degrades, and says why.
    config = {"shared": {"redis_url": "redis://127.0.0.1:9", "key_prefix": prefix, "timeout": 50}}
    return laneway.Router(config=config, **emulator.router_kwargs())


def test_a_degraded_shared_state_is_logged_once_per_episode_with_its_fields(emulator, collected):
    logging.getLogger("laneway").setLevel(logging.INFO)
    router = degraded_router(emulator, "logs-a")
    for _ in range(25):
        router.generate_sync("hi", family="nova", max_tokens=8)
    assert router.metrics()["shared"]["degraded"]
    # Every record the core kept during the calls, handed to `logging` now.
    _logs.flush()
    unusable = lambda: [r for r in collected.records if "shared state unusable" in r.getMessage()]
    assert unusable(), [r.getMessage() for r in collected.records]
    record = unusable()[0]
    assert record.levelno == logging.WARNING
    assert record.name.startswith("laneway.state.shared"), record.name
    assert "127.0.0.1" not in record.name
    assert getattr(record, "laneway.error")
    # Said once for the episode, not once per call.
    _logs.flush()
    assert len(unusable()) == 1
    assert _logs.dropped() == 0


def test_the_level_follows_the_laneway_logger(emulator, collected):
    logging.getLogger("laneway").setLevel(logging.ERROR)
    router = degraded_router(emulator, "logs-b")
    for _ in range(5):
        router.generate_sync("hi", family="nova", max_tokens=8)
    assert router.metrics()["shared"]["degraded"]
    # The router took the logger's level when it was made: nothing below ERROR was kept.
    _logs.flush()
    assert not [r for r in collected.records if r.levelno < logging.ERROR]
