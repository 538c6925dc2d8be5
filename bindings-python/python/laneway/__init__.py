"""Laneway: SLO-aware routing of LLM calls across Amazon Bedrock and SageMaker, in process.

Every decision (model variant, service tier, region or endpoint, prompt-cache checkpoints,
failover) is made by the Rust core; this package converts Python values and calls it.

    import asyncio, laneway

    async def main():
        router = laneway.Router(endpoint_url="http://127.0.0.1:4010",
                                access_key_id="LANEWAYTESTKEY", secret_access_key="LANEWAYTESTSECRET")
        answer = await router.generate("Summarise our refund policy", family="nova", slo="background")
        print(answer.text, answer.cost_usd, answer.decision.tier)

    asyncio.run(main())
"""

from ._laneway import BatchHandle, StreamEvent
from .errors import (  # every error class, defined once in errors.py
    AccessDeniedError,
    AllTargetsFailedError,
    AuthenticationError,
    ConfigError,
    InvalidRequestError,
    LanewayError,
    LanewayInternalError,
    ModelError,
    ModelNotReadyError,
    NotFoundError,
    OverloadedError,
    QuotaExceededError,
    ServiceInternalError,
    StreamInterruptedError,
    TargetTimeoutError,
    ThrottledError,
    TransportError,
    UnavailableError,
    ValidationError,
)
from ._laneway import version as _version
from ._context import last_decision, options
from ._router import BatchSession, Router
from ._types import (
    Decision,
    Message,
    Request,
    Response,
    Timings,
    Usage,
)

__version__: str = _version()

__all__ = [
    "options",
    "last_decision",
    "BatchHandle",
    "BatchSession",
    "Router",
    "Request",
    "Message",
    "Response",
    "StreamEvent",
    "Usage",
    "Timings",
    "Decision",
    "LanewayError",
    "ThrottledError",
    "UnavailableError",
    "ModelNotReadyError",
    "TargetTimeoutError",
    "ServiceInternalError",
    "TransportError",
    "ModelError",
    "ValidationError",
    "AccessDeniedError",
    "AuthenticationError",
    "NotFoundError",
    "QuotaExceededError",
    "StreamInterruptedError",
    "AllTargetsFailedError",
    "OverloadedError",
    "ConfigError",
    "InvalidRequestError",
    "LanewayInternalError",
]
