"""Typed views of requests, responses and stream events (plain data; no routing here)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union


@dataclass(frozen=True)
class Message:
    """A conversation turn: `role` is "user" or "assistant"."""

    role: str
    text: str

    def to_dict(self) -> Dict[str, Any]:
        return {"role": self.role, "content": [{"text": self.text}]}


@dataclass
class Request:
    """A request, for those who prefer a class to keyword arguments or a dict.

    `prompt` is the user's message; `messages` a whole conversation instead (`Message`s, or dicts
    in the core's shape with any block: text, image, document, tool_use, tool_result,
    cache_point; `bytes` as Python `bytes` or base64 text).
    `model` names a model or inference-profile id, `family` a configured family (the plan picks
    the variant). `system` is text or a list of blocks (`{"text": ...}`, `{"cache_point": {}}`).
    `tools` are dicts: `{"name", "description", "input_schema"}` or the core's `{"spec": ...}` /
    `{"cache_point": ...}`; `tool_choice` is "auto", "any" or a tool's name. `slo` is
    "interactive", "standard", "background" or "batch"; `ttft_target_ms` and `deadline_ms`
    refine it. `reasoning` is `{"effort": "low"|"medium"|"high"|"max", "budget_tokens": n}`
    (either key); `output_schema` a JSON schema (an object schema) the answer's text conforms to;
    `metadata` key-value pairs Bedrock logs with the call; `guardrail` a Bedrock guardrail
    (`{"identifier", "version", "trace": "enabled", "stream_mode": "sync"}`); `model_fields`
    fields written for one model (`{"model", "request", "response_paths"}`), sent only to it.
    `residency` is a geography's name (`"eu"`, `"jp"`), a list of regions, or the core's
    `{"geography": ...}` / `{"regions": [...]}`. The core reads all of it
    (`laneway::surface::flat`): an unknown key is an `InvalidRequestError` naming it.
    """

    prompt: Optional[str] = None
    messages: Sequence[Union[Message, Mapping[str, Any]]] = ()
    model: Optional[str] = None
    family: Optional[str] = None
    system: Union[None, str, Sequence[Mapping[str, Any]]] = None
    tools: Sequence[Mapping[str, Any]] = ()
    tool_choice: Optional[str] = None
    max_tokens: Optional[int] = None
    temperature: Optional[float] = None
    top_p: Optional[float] = None
    stop_sequences: Sequence[str] = ()
    slo: Optional[str] = None
    ttft_target_ms: Optional[int] = None
    deadline_ms: Optional[int] = None
    task_id: Optional[str] = None
    tier: Optional[str] = None
    residency: Union[None, str, Sequence[str], Mapping[str, Any]] = None
    min_variant: Optional[str] = None
    cache: Optional[str] = None
    continue_on_interrupt: bool = False
    reasoning: Optional[Mapping[str, Any]] = None
    output_schema: Optional[Mapping[str, Any]] = None
    metadata: Optional[Mapping[str, str]] = None
    guardrail: Optional[Mapping[str, Any]] = None
    model_fields: Optional[Mapping[str, Any]] = None

    def to_dict(self) -> Dict[str, Any]:
        """The options given, as the core reads them (`laneway::surface::flat` decides every key)."""
        out: Dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None or value == () or value is False:
                continue
            if f.name == "messages":
                value = [m.to_dict() if isinstance(m, Message) else dict(m) for m in value]
            out[f.name] = value
        return out


@dataclass(frozen=True)
class Usage:
    """Tokens of one call: new input, cache writes (all TTLs; `cache_write_1h_tokens` of them at
    the 1-hour TTL) and reads, output (`reasoning_tokens` of them spent reasoning, when the
    service says); `input_estimated` when the input count is Laneway's estimate (the service
    sent none)."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cache_write_1h_tokens: int = 0
    reasoning_tokens: int = 0
    input_estimated: bool = False
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def _from(cls, d: Dict[str, Any]) -> "Usage":
        return cls(
            d["input_tokens"], d["output_tokens"], d.get("cache_read_tokens", 0), d.get("cache_write_tokens", 0),
            d.get("cache_write_1h_tokens", 0), d.get("reasoning_tokens", 0), d.get("input_estimated", False), d,
        )


@dataclass(frozen=True)
class Timings:
    """Time to first token of any kind (streams), to the first reasoning and the first answer
    token apart, end to end, and output tokens per second; durations in milliseconds, as
    everywhere in Laneway's schema."""

    ttft_ms: Optional[float]
    total_ms: float
    output_tokens_per_second: Optional[float]
    inter_token_p50_ms: Optional[float]
    ttft_reasoning_ms: Optional[float] = None
    ttft_answer_ms: Optional[float] = None
    inter_token_mean_ms: Optional[float] = None
    inter_token_p90_ms: Optional[float] = None
    inter_token_max_ms: Optional[float] = None

    @classmethod
    def _from(cls, d: Dict[str, Any]) -> "Timings":
        itl = d.get("inter_token") or {}
        return cls(
            d.get("ttft_ms"), d["total_ms"], d.get("output_tokens_per_second"), itl.get("p50_ms"),
            d.get("ttft_reasoning_ms"), d.get("ttft_answer_ms"), itl.get("mean_ms"), itl.get("p90_ms"), itl.get("max_ms"),
        )


@dataclass(frozen=True)
class Decision:
    """What served the call and why: provider, model, family, target, region, tier (asked and
    served), reasons, failovers; `call_id` for `Router.feedback`."""

    call_id: str
    model: str
    family: Optional[str]
    target: str
    region: str
    tier: Optional[str]
    endpoint: Optional[str]
    invoked_model: Optional[str]
    reasons: List[Dict[str, Any]]
    failed_attempts: List[Dict[str, Any]]
    attempts_sent: int
    hedge: Optional[Dict[str, Any]]
    provider: str = "bedrock"
    served_tier: Optional[str] = None

    @classmethod
    def _from(cls, d: Dict[str, Any]) -> "Decision":
        return cls(
            d["call_id"], d["model"], d.get("family"), d["target"], d["region"], d.get("tier"), d.get("endpoint"),
            d.get("invoked_model"), d.get("reasons", []), d.get("failed_attempts", []), d.get("attempts_sent", 1), d.get("hedge"),
            d.get("provider", "bedrock"), d.get("served_tier"),
        )


class Response:
    """The answer to a call: `.text`, `.usage`, `.timings`, `.decision`, `.cost_usd`."""

    __slots__ = ("_d", "usage", "timings", "decision")

    def __init__(self, d: Dict[str, Any]):
        self._d = d
        self.usage = Usage._from(d["usage"])
        self.timings = Timings._from(d["timings"])
        self.decision = Decision._from(d["decision"])

    @property
    def text(self) -> str:
        """All text blocks, concatenated."""
        return "".join(b["text"] for b in self._d["content"] if "text" in b)

    @property
    def reasoning_text(self) -> str:
        """The model's readable reasoning, concatenated ("" without it, or when redacted)."""
        return "".join(b["reasoning"]["text"]["text"] for b in self._d["content"] if "text" in b.get("reasoning", {}))

    @property
    def tool_uses(self) -> List[Dict[str, Any]]:
        """The tool calls the model made: dicts with `id`, `name`, `input`."""
        return [b["tool_use"] for b in self._d["content"] if "tool_use" in b]

    @property
    def stop_reason(self) -> str:
        return self._d["stop_reason"]

    @property
    def cost_usd(self) -> float:
        """What the call cost, from the price book, in US dollars."""
        return self._d["cost_usd"]

    @property
    def cache_savings_usd(self) -> float:
        return self._d["cache_savings_usd"]

    def to_dict(self) -> Dict[str, Any]:
        """The whole response as plain data."""
        return self._d

    def __repr__(self) -> str:
        return f"Response(text={self.text[:40]!r}, model={self.decision.model!r}, cost_usd={self.cost_usd:.6f})"


