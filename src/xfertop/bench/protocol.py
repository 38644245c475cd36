"""The wire between the bench child and its readers: one JSON object per line on the child's stdout.

Every line carries ``"v": PROTOCOL_VERSION`` and a ``"type"``. A run is: one ``hello``, any number of
``progress`` and ``case`` lines, then exactly one of ``run`` (all results and verdicts) or ``failure``
(could not run, with a one-line reason). The child's exit code repeats the outcome: 0 pass, 1 fail, 2
could not run. Anything else on stdout is a protocol error; the child logs to stderr only.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, Union

from xfertop.model.bench import BenchRun, CaseResult
from xfertop.model.plain import to_plain

PROTOCOL_VERSION = 1
#: Schema of a BenchRun in JSON (the --json output and the records folder).
RUN_SCHEMA = 1


class ProtocolError(ValueError):
    """A line that is not a message of this protocol version."""


@dataclass(frozen=True)
class Hello:
    backend: str
    cases: tuple[str, ...]
    pid: int
    type: Literal["hello"] = "hello"


@dataclass(frozen=True)
class Progress:
    case: str
    #: 0..1 within the case.
    fraction: float
    text: str = ""
    type: Literal["progress"] = "progress"


@dataclass(frozen=True)
class CaseDone:
    result: CaseResult
    type: Literal["case"] = "case"


@dataclass(frozen=True)
class RunDone:
    run: BenchRun
    type: Literal["run"] = "run"


@dataclass(frozen=True)
class Failure:
    reason: str
    exit_code: int = 2
    type: Literal["failure"] = "failure"


Message = Hello | Progress | CaseDone | RunDone | Failure
_BY_TYPE: dict[str, type] = {
    "hello": Hello,
    "progress": Progress,
    "case": CaseDone,
    "run": RunDone,
    "failure": Failure,
}


def encode(message: Message) -> str:
    """One line of JSON, without the newline."""
    return json.dumps({"v": PROTOCOL_VERSION, **to_plain(message)}, separators=(",", ":"))


T = TypeVar("T")


def from_jsonable(cls: type[T], data: Any) -> T:
    """Rebuild a dataclass (nested dataclasses, tuples, optionals, dicts) from to_plain's output."""
    return typing.cast(T, _decode(cls, data))


def _decode(tp: Any, data: Any) -> Any:
    origin = typing.get_origin(tp)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise ProtocolError(f"expected an object for {tp.__name__}, got {type(data).__name__}")
        hints = typing.get_type_hints(tp)
        known = {f.name for f in dataclasses.fields(tp) if f.init}
        try:
            return tp(**{k: _decode(hints[k], v) for k, v in data.items() if k in known})
        except TypeError as exc:
            raise ProtocolError(f"bad {tp.__name__}: {exc}") from exc
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
        return _decode(next(a for a in args if a is not type(None)), data)
    if origin is tuple:
        return tuple(_decode(typing.get_args(tp)[0], x) for x in data)
    if origin is dict:
        if not isinstance(data, dict):
            raise ProtocolError(f"expected an object, got {type(data).__name__}")
        return {k: _decode(typing.get_args(tp)[1], v) for k, v in data.items()}
    if tp is float and isinstance(data, int):
        return float(data)
    return data


def decode(line: str) -> Message:
    """Parse one line into a message; ProtocolError if it is not one of ours."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ProtocolError(f"not JSON: {line[:80]!r}") from exc
    if not isinstance(data, dict):
        raise ProtocolError(f"not a message object: {line[:80]!r}")
    version = data.pop("v", None)
    if version != PROTOCOL_VERSION:
        raise ProtocolError(f"bench protocol version {version!r}, this xfertop speaks {PROTOCOL_VERSION}")
    cls = _BY_TYPE.get(str(data.get("type")))
    if cls is None:
        raise ProtocolError(f"unknown message type {data.get('type')!r}")
    return typing.cast(Message, from_jsonable(cls, data))


def run_to_json(run: BenchRun) -> str:
    return json.dumps(to_plain(run), indent=1)


def run_from_json(text: str) -> BenchRun:
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("schema") != RUN_SCHEMA:
        raise ProtocolError(f"not an xfertop bench run of schema {RUN_SCHEMA}")
    return from_jsonable(BenchRun, data)
