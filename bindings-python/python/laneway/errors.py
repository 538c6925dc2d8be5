"""The errors Laneway raises: `LanewayError` and one subclass per kind of the core's
`ErrorDetails` (`kind`), each defined once, here. The native module raises the class of an
error's kind (looked up in `_BY_KIND`), with every detail as an attribute."""

from typing import Any as _Any
from typing import Dict as _Dict
from typing import List as _List
from typing import Optional as _Optional
from typing import Type as _Type


class LanewayError(Exception):
    """Every error Laneway raises. `kind` is the stable snake_case error kind (the core's
    `ErrorDetails`); `code` the service's own code where one came; `details` all of them as a
    dict. Attributes an error's kind lacks are None."""

    #: The stable snake_case error kind.
    kind: str
    details: _Dict[str, _Any]
    field: _Optional[str]
    code: _Optional[str]
    target: _Optional[str]
    region: _Optional[str]
    http_status: _Optional[int]
    request_id: _Optional[str]
    retry_after_ms: _Optional[float]
    attempts: _Optional[_List[_Dict[str, _Any]]]
    budget_exhausted: _Optional[bool]
    wait_needed_ms: _Optional[float]
    wait_allowed_ms: _Optional[float]
    waited_ms: _Optional[float]
    delivered: _Optional[_Dict[str, int]]
    cause: _Optional[_Dict[str, _Any]]


class _ServiceErrorAttributes:
    """Set when the error came from one target: `code`, `target`, `region`, `http_status`,
    `request_id`, `retry_after_ms`."""


class ThrottledError(LanewayError, _ServiceErrorAttributes):
    """The target is over capacity."""

    kind = "throttled"


class UnavailableError(LanewayError, _ServiceErrorAttributes):
    """The service or region is down."""

    kind = "unavailable"


class ModelNotReadyError(LanewayError, _ServiceErrorAttributes):
    """The model or endpoint is loading."""

    kind = "model_not_ready"


class TargetTimeoutError(LanewayError, _ServiceErrorAttributes):
    """The model or connection took too long."""

    kind = "timeout"


class ServiceInternalError(LanewayError, _ServiceErrorAttributes):
    """A transient failure inside the service."""

    kind = "internal"


class TransportError(LanewayError, _ServiceErrorAttributes):
    """The connection failed before an answer."""

    kind = "transport"


class ModelError(LanewayError, _ServiceErrorAttributes):
    """The model failed on this input."""

    kind = "model_error"


class ValidationError(LanewayError, _ServiceErrorAttributes):
    """The service refused the request as invalid."""

    kind = "validation"


class AccessDeniedError(LanewayError, _ServiceErrorAttributes):
    """Permission was refused for a target (a model not enabled in its region, say)."""

    kind = "access_denied"


class AuthenticationError(LanewayError, _ServiceErrorAttributes):
    """The credentials were refused or could not be had (an expired token, a bad signature, no credentials): the call fails at once."""

    kind = "authentication"


class NotFoundError(LanewayError, _ServiceErrorAttributes):
    """The model, profile or endpoint does not exist."""

    kind = "not_found"


class QuotaExceededError(LanewayError, _ServiceErrorAttributes):
    """An account quota was exceeded."""

    kind = "quota_exceeded"


class StreamInterruptedError(LanewayError):
    """A stream failed after part of the answer was delivered (see `delivered`)."""

    kind = "stream_interrupted"


class AllTargetsFailedError(LanewayError):
    """Every planned target failed (see `attempts`)."""

    kind = "all_targets_failed"


class OverloadedError(LanewayError):
    """Every target the call may use was at its concurrency, and no slot could come within its deadline (see `wait_needed_ms`, `wait_allowed_ms`, `waited_ms`)."""

    kind = "overloaded"


class ConfigError(LanewayError):
    """The configuration is malformed or contradictory."""

    kind = "config"


class InvalidRequestError(LanewayError):
    """The request is malformed; nothing was sent."""

    kind = "invalid_request"


class LanewayInternalError(LanewayError):
    """A bug inside Laneway (a panic, or a value it could not convert); the message says where. Please report it."""

    kind = "laneway_internal"


#: Each error kind's class, which the native module raises: every kind of the core's
#: `ErrorDetails::kinds()` has one (checked by tests/test_schema.py).
_BY_KIND: _Dict[str, _Type[LanewayError]] = {
    cls.kind: cls for cls in LanewayError.__subclasses__()
}
