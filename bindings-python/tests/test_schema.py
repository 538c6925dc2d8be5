"""The Python surface against the core's: every request option, typed field and error kind the
core has is here, and nothing else (`laneway::surface::schema::names`)."""

import dataclasses
import pathlib
import re

import laneway
from laneway import _laneway
from laneway._types import Decision, Request, Timings, Usage

SCHEMA = _laneway._schema()
STUB = (pathlib.Path(laneway.__file__).parent / "_laneway.pyi").read_text()


def names(cls, leave_out=()):
    return sorted(f.name for f in dataclasses.fields(cls) if f.name not in leave_out)


def test_request_has_every_option_of_the_flat_form_and_no_other():
    assert names(Request) == sorted(SCHEMA["request_options"]["snake"])


def test_typed_views_have_every_key_the_core_sends():
    assert names(Usage, leave_out=("raw",)) == sorted(SCHEMA["usage"])
    assert names(Timings, leave_out=("raw",)) == sorted(SCHEMA["timings"])
    assert names(Decision, leave_out=("raw",)) == sorted(SCHEMA["decision"])


def test_every_error_kind_has_its_own_exported_class_and_no_other_is_defined():
    classes = {}
    for kind in SCHEMA["error_kinds"]:
        cls = _laneway._error_class(kind)
        assert issubclass(cls, laneway.LanewayError), kind
        assert cls.kind == kind, (cls, kind)
        assert cls.__name__ == SCHEMA["error_classes"][kind], (cls, kind)
        assert cls.__module__ == "laneway.errors", cls
        assert getattr(laneway, cls.__name__) is cls, f"{cls.__name__} is not exported by laneway"
        classes[cls] = kind
    # One class per kind: none falls through to another kind's (or the internal) class.
    assert len(classes) == len(SCHEMA["error_kinds"])
    assert classes[laneway.LanewayInternalError] == "laneway_internal"
    # The classes are defined once, in laneway/errors.py: one per kind, and no other.
    assert set(laneway.errors._BY_KIND) == set(SCHEMA["error_kinds"])
    exported = {n for n in laneway.__all__ if n.endswith("Error")}
    assert exported == {"LanewayError", *(c.__name__ for c in classes)}
    assert not re.findall(r"^class (\w+Error)\(", STUB, re.M), "error classes are defined in errors.py only"


def test_an_unknown_keyword_names_itself_and_the_known_ones():
    router = laneway.Router(
        config={"regions": [{"name": "us-east-1"}]}, endpoint_url="http://127.0.0.1:9", access_key_id="k", secret_access_key="s"
    )
    try:
        router.plan("hi", maxTokens=10)
    except laneway.InvalidRequestError as e:
        assert e.field == "maxTokens" and "max_tokens" in str(e), str(e)
    else:
        raise AssertionError("an unknown keyword was accepted")
