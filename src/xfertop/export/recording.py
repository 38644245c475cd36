"""Record files: the snapshots the live view renders, as gzip-compressed JSON lines, and back.

Lossless: each frame holds the model objects the sources published (``GpuState``, ``HostState``,
``JobsState``, ``Topology``) in their plain form (``model.plain.to_plain``), and reading a frame gives the
very objects again (``model.plain.from_plain``). To stay small, a frame leaves out a part whose snapshot did
not change since the frame before, and a rank's steps carry only the steps that are new or changed (a GPU
timing resolved) since the frame before; every ``KEY_EVERY``-th frame, and the first of each file, is a key
frame that holds everything. A file rotates once it reaches ``max_bytes`` (FILE -> FILE.1 -> FILE.2 ...,
``keep`` older files kept); each file starts with its own header and key frame, so each replays alone.
The line formats are published as a JSON Schema (docs/recording.schema.json); see docs/recording.md.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import socket
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import IO, Any

from xfertop.model.gpu import GpuState
from xfertop.model.host import HostState
from xfertop.model.jobs import JobsState, JobState, RankState, StepRecord
from xfertop.model.plain import PlainFormError, from_plain, json_schema, to_plain
from xfertop.model.topology import Topology

SCHEMA = "xfertop.recording/2"
#: Formats this xfertop still reads: /1 steps carried event intervals (copy_gpu_ms, compute_gpu_ms,
#: gpu_idle_ms) instead of the host's parts and the GPU's measured gap (ring format v2).
OLDER_SCHEMAS = ("xfertop.recording/1",)
#: A key frame (everything, no deltas) every this many frames: what a seek decodes at most.
KEY_EVERY = 30
DEFAULT_MAX_BYTES = 32 * 1024 * 1024
DEFAULT_KEEP = 3
PARTS: dict[str, type] = {"gpu": GpuState, "host": HostState, "jobs": JobsState, "topology": Topology}


class RecordingError(Exception):
    """A recording that cannot be read; the message is one sentence for the user."""


@dataclass(frozen=True)
class Snapshot:
    """What the live view had at one moment: each part None where its source had given nothing yet."""

    time: float
    gpu: GpuState | None = None
    host: HostState | None = None
    jobs: JobsState | None = None
    topology: Topology | None = None


# -- writing --------------------------------------------------------------------------------------------
class _StepsDelta:
    """Per ring (path), the steps the last frame carried: what the next frame can leave out."""

    def __init__(self) -> None:
        self._held: dict[str, tuple[tuple[StepRecord, ...], dict[int, StepRecord]]] = {}

    def encode(self, rank: RankState, key: bool) -> dict[str, Any]:
        steps = rank.steps
        last = self._held.get(rank.ring_path)
        reset = key or last is None or not _delta_reproduces(last[1], steps)
        if reset:
            changed: list[StepRecord] = list(steps)
        elif last is not None and last[0] is steps:
            changed = []
        else:
            held = last[1] if last is not None else {}
            changed = [step for step in steps if held.get(step.step) != step]
        self._held[rank.ring_path] = (steps, {step.step: step for step in steps})
        fields = to_plain(rank)
        fields["steps"] = [to_plain(step) for step in changed]
        fields["steps_reset"] = reset
        fields["steps_first"] = steps[0].step if steps else None
        fields["steps_count"] = len(steps)
        return fields

    def forget_others(self, paths: set[str]) -> None:
        for path in set(self._held) - paths:
            del self._held[path]


def _delta_reproduces(held: dict[int, StepRecord], steps: tuple[StepRecord, ...]) -> bool:
    """Applying a delta to ``held`` gives ``steps`` only if every held step from the first of ``steps`` on
    is still among them (a ring read afresh, a file replaced, may hold other steps)."""
    if not steps:
        return not held
    first = steps[0].step
    numbers = {step.step for step in steps}
    return all(number in numbers for number in held if number >= first)


def _jobs_plain(jobs: JobsState, deltas: _StepsDelta, key: bool) -> dict[str, Any]:
    plain = to_plain(replace(jobs, jobs=()))
    plain["jobs"] = [
        {**to_plain(replace(job, ranks=())), "ranks": [deltas.encode(rank, key) for rank in job.ranks]}
        for job in jobs.jobs
    ]
    deltas.forget_others({rank.ring_path for job in jobs.jobs for rank in job.ranks})
    return plain


class RecordingWriter:
    """Appends frames to ``path``; rotates at ``max_bytes`` (compressed), keeping ``keep`` older files."""

    def __init__(
        self, path: str, interval_s: float, max_bytes: int = DEFAULT_MAX_BYTES, keep: int = DEFAULT_KEEP
    ) -> None:
        self.path, self.interval_s, self.max_bytes, self.keep = path, interval_s, max_bytes, keep
        self.frames_written = 0
        self.files_rotated = 0
        self._raw: IO[bytes] | None = None
        self._zipped: gzip.GzipFile | None = None
        self._deltas = _StepsDelta()
        self._last: dict[str, object] = {}
        self._frames_in_file = 0
        self._open()

    def _open(self) -> None:
        self._raw = open(self.path, "wb")  # noqa: SIM115 (closed in close/_rotate)
        self._zipped = gzip.GzipFile(fileobj=self._raw, mode="wb", filename="", mtime=0)
        self._frames_in_file = 0
        self._write_line(
            {
                "kind": "header",
                "schema": SCHEMA,
                "created_unix_s": time.time(),
                "host": socket.gethostname(),
                "interval_s": self.interval_s,
                "part": self.files_rotated,
            }
        )

    def _write_line(self, document: dict[str, Any]) -> None:
        assert self._zipped is not None
        self._zipped.write(json.dumps(document, separators=(",", ":")).encode() + b"\n")
        # Each frame is flushed whole: a recorder killed later leaves every frame before it readable.
        self._zipped.flush(zlib.Z_SYNC_FLUSH)

    def write(self, snapshot: Snapshot) -> None:
        if self._raw is not None and self._raw.tell() >= self.max_bytes:
            self._rotate()
        key = self._frames_in_file % KEY_EVERY == 0
        frame: dict[str, Any] = {
            "kind": "frame",
            "index": self.frames_written,
            "time": snapshot.time,
            "key": key,
        }
        for name in PARTS:
            value = getattr(snapshot, name)
            if not key and name in self._last and self._last[name] is value:
                continue  # unchanged since the frame before: left out
            self._last[name] = value
            if value is None:
                frame[name] = None
            elif name == "jobs":
                frame[name] = _jobs_plain(value, self._deltas, key)
            else:
                frame[name] = to_plain(value)
        self._write_line(frame)
        self.frames_written += 1
        self._frames_in_file += 1

    def _rotate(self) -> None:
        self._close_file()
        for older in range(self.keep, 0, -1):
            source = self.path if older == 1 else f"{self.path}.{older - 1}"
            with contextlib.suppress(FileNotFoundError):
                os.replace(source, f"{self.path}.{older}")
        if self.keep == 0:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        self.files_rotated += 1
        self._last.clear()
        self._open()

    def _close_file(self) -> None:
        if self._zipped is not None:
            self._zipped.close()
            self._zipped = None
        if self._raw is not None:
            self._raw.close()
            self._raw = None

    def close(self) -> None:
        self._close_file()


# -- reading --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Recording:
    path: str
    header: dict[str, Any]
    frames: tuple[Snapshot, ...]


def _lines(path: str) -> Iterator[tuple[int, bytes]]:
    number = 0
    try:
        with gzip.open(path, "rb") as file:
            for number, line in enumerate(file, start=1):
                yield number, line
    except FileNotFoundError:
        raise RecordingError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise RecordingError(f"{path} is a directory, not a recording") from None
    except PermissionError:
        raise RecordingError(f"{path}: permission denied") from None
    except gzip.BadGzipFile as exc:
        if number == 0:
            raise RecordingError(f"{path} is not an xfertop recording (not gzip-compressed)") from None
        raise RecordingError(f"{path} is damaged after line {number} ({exc})") from None
    except EOFError:
        raise _Truncated() from None
    except (zlib.error, OSError) as exc:
        raise RecordingError(f"{path} is damaged (its compressed data is corrupt: {exc})") from None


class _Truncated(Exception):
    pass


class _Decoder:
    """Turns frame lines back into Snapshots, carrying unchanged parts and held steps from frame to frame."""

    def __init__(self, schema: str = SCHEMA) -> None:
        self.last = Snapshot(time=0.0)
        self._steps: dict[str, dict[int, StepRecord]] = {}
        self._v1 = schema == "xfertop.recording/1"

    def decode(self, frame: dict[str, Any]) -> Snapshot:
        parts: dict[str, Any] = {}
        for name, kind in PARTS.items():
            if name not in frame:
                if frame.get("key"):
                    raise PlainFormError(f"key frame {frame.get('index')} lacks its {name} part")
                parts[name] = getattr(self.last, name)
            elif frame[name] is None:
                parts[name] = None
            elif name == "jobs":
                parts[name] = self._jobs(frame[name])
            else:
                parts[name] = from_plain(kind, frame[name], name)
        if not isinstance(frame.get("time"), (int, float)):
            raise PlainFormError("the frame has no time")
        self.last = Snapshot(time=frame["time"], **parts)
        return self.last

    def _jobs(self, plain: dict[str, Any]) -> JobsState:
        if not isinstance(plain, dict) or not isinstance(plain.get("jobs"), list):
            raise PlainFormError("jobs: expected an object with a list of jobs")
        jobs: list[JobState] = []
        for index, job in enumerate(plain["jobs"]):
            where = f"jobs.jobs[{index}]"
            ranks = tuple(
                self._rank(rank, f"{where}.ranks[{n}]")
                for n, rank in enumerate(job.get("ranks", []) if isinstance(job, dict) else [])
            )
            jobs.append(replace(from_plain(JobState, {**job, "ranks": []}, where), ranks=ranks))
        state: JobsState = from_plain(JobsState, {**plain, "jobs": []}, "jobs")
        return replace(state, jobs=tuple(jobs))

    def _rank(self, plain: Any, where: str) -> RankState:
        if not isinstance(plain, dict):
            raise PlainFormError(f"{where}: expected an object")
        extra = {name: plain.get(name) for name in ("steps_reset", "steps_first", "steps_count")}
        fields = {key: value for key, value in plain.items() if key not in extra}
        if self._v1 and isinstance(fields.get("steps"), list):
            fields["steps"] = [_step_of_v1(step) for step in fields["steps"]]
        rank: RankState = from_plain(RankState, fields, where)
        held = {} if extra["steps_reset"] else self._steps.get(rank.ring_path, {})
        for step in rank.steps:
            held[step.step] = step
        first = extra["steps_first"]
        steps = tuple(
            sorted(
                (step for number, step in held.items() if first is not None and number >= first),
                key=lambda step: step.step,
            )
        )
        if len(steps) != extra["steps_count"]:
            raise PlainFormError(
                f"{where}: its steps do not add up ({len(steps)} held, {extra['steps_count']} recorded)"
            )
        self._steps[rank.ring_path] = {step.step: step for step in steps}
        return replace(rank, steps=steps)


_V1_EVENT_INTERVALS = ("copy_gpu_ms", "compute_gpu_ms", "gpu_idle_ms")


def _step_of_v1(plain: Any) -> Any:
    """A /1 step in today's shape: its event intervals were not the GPU's own busy or idle time, so they
    are dropped (no gap measured) and the host's other parts, never recorded, read 0: the model holds
    them, as under watch()."""
    if not isinstance(plain, dict):
        return plain
    step = {key: value for key, value in plain.items() if key not in _V1_EVENT_INTERVALS}
    step.update(loop_pre_ms=0.0, sync_ms=0.0, loop_post_ms=0.0, gpu_gap_ms=None)
    return step


def read_recording(path: str, partial: bool = False) -> Recording:
    """Every frame of the recording at ``path``; RecordingError (one sentence) for anything wrong with
    it. ``partial``: a file the recorder never closed gives the frames before its end, not an error."""
    header: dict[str, Any] | None = None
    frames: list[Snapshot] = []
    decoder = _Decoder()
    try:
        for number, line in _lines(path):
            document = _parse(path, number, line)
            if header is None:
                header = _check_header(path, document)
                decoder = _Decoder(header["schema"])
                continue
            try:
                frames.append(decoder.decode(document))
            except (PlainFormError, TypeError, AttributeError) as exc:
                raise RecordingError(
                    f"{path}: frame on line {number} does not fit the snapshot model ({exc})"
                ) from None
    except _Truncated:
        if not frames:
            raise RecordingError(
                f"{path} is truncated before its first frame (the recorder was stopped before it wrote "
                "one): there is nothing to replay"
            ) from None
        if not partial:
            count = "1 frame" if len(frames) == 1 else f"{len(frames)} frames"
            shows = "shows that frame" if len(frames) == 1 else "shows those frames"
            raise RecordingError(
                f"{path} is truncated after {count} (the recorder was stopped before it closed the file); "
                f"`xfertop replay --partial {path}` {shows}"
            ) from None
    if header is None:
        raise RecordingError(f"{path} is empty: not an xfertop recording")
    if not frames:
        raise RecordingError(f"{path} holds no frames yet")
    return Recording(path, header, tuple(frames))


def _parse(path: str, number: int, line: bytes) -> dict[str, Any]:
    try:
        document = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        raise RecordingError(f"{path}: line {number} is not JSON: the recording is damaged") from None
    if not isinstance(document, dict):
        raise RecordingError(f"{path}: line {number} is not a JSON object: the recording is damaged")
    return document


def _check_header(path: str, document: dict[str, Any]) -> dict[str, Any]:
    schema = document.get("schema")
    if (
        document.get("kind") != "header"
        or not isinstance(schema, str)
        or not schema.startswith("xfertop.recording/")
    ):
        raise RecordingError(f"{path} is not an xfertop recording (no recording header on its first line)")
    if schema != SCHEMA and schema not in OLDER_SCHEMAS:
        raise RecordingError(
            f"{path} is a recording of format {schema}, which this xfertop does not read "
            f"(it reads {SCHEMA}): upgrade xfertop"
        )
    return document


# -- the published schema -------------------------------------------------------------------------------
def recording_schema() -> dict[str, Any]:
    """The JSON Schema of one line of a recording (docs/recording.schema.json is this, written out)."""
    definitions: dict[str, Any] = {}
    parts = {
        name: {"anyOf": [json_schema(kind, definitions), {"type": "null"}]} for name, kind in PARTS.items()
    }
    # A recorded rank: RankState's fields, with the steps of the frame's delta and how to apply it.
    rank = dict(definitions["RankState"])
    rank["properties"] = {
        **rank["properties"],
        "steps_reset": {"type": "boolean"},
        "steps_first": {"type": ["integer", "null"]},
        "steps_count": {"type": "integer", "minimum": 0},
    }
    rank["required"] = [*rank["required"], "steps_reset", "steps_first", "steps_count"]
    definitions["RecordedRankState"] = rank
    definitions["RecordedJobState"] = _with_ranks(definitions["JobState"], "RecordedRankState")
    definitions["RecordedJobsState"] = _with_jobs(definitions["JobsState"], "RecordedJobState")
    parts["jobs"] = {"anyOf": [{"$ref": "#/$defs/RecordedJobsState"}, {"type": "null"}]}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"One line of an xfertop recording ({SCHEMA}): a header, then frames",
        "oneOf": [{"$ref": "#/$defs/Header"}, {"$ref": "#/$defs/Frame"}],
        "$defs": {
            "Header": {
                "type": "object",
                "properties": {
                    "kind": {"const": "header"},
                    "schema": {"const": SCHEMA},
                    "created_unix_s": {"type": "number"},
                    "host": {"type": "string"},
                    "interval_s": {"type": "number"},
                    "part": {"type": "integer"},
                },
                "required": ["kind", "schema"],
            },
            "Frame": {
                "type": "object",
                "properties": {
                    "kind": {"const": "frame"},
                    "index": {"type": "integer"},
                    "time": {"type": "number"},
                    "key": {"type": "boolean"},
                    **parts,
                },
                "required": ["kind", "index", "time", "key"],
                "additionalProperties": False,
            },
            **definitions,
        },
    }


def _with_ranks(job: dict[str, Any], rank_ref: str) -> dict[str, Any]:
    return {
        **job,
        "properties": {
            **job["properties"],
            "ranks": {"type": "array", "items": {"$ref": f"#/$defs/{rank_ref}"}},
        },
    }


def _with_jobs(jobs: dict[str, Any], job_ref: str) -> dict[str, Any]:
    return {
        **jobs,
        "properties": {
            **jobs["properties"],
            "jobs": {"type": "array", "items": {"$ref": f"#/$defs/{job_ref}"}},
        },
    }
