"""Parsers for what py-spy prints: ``dump --json`` and ``record -f raw -t -s`` (folded stacks).

Raw lines look like
``process 12:"python t.py";process 15:"...";thread (15): MainThread;f (a.py:3);g (b.py:9) 7``:
process frames from the attached root down to the sampled process, then the thread, then frames
outermost first, then the sample count. A command line may hold newlines, so a record runs until the
next line that starts a new ``process N:"`` record.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from xfertop.model.stacks import Frame, ThreadStack

_RECORD_START = re.compile(r'^process \d+:"')
_PROCESS = re.compile(r'process (\d+):"')
_THREAD = re.compile(r"thread \((\d+|0x[0-9A-Fa-f]+)\)(?:: (.*))?$")
_FRAME = re.compile(r"^(.*) \((.*?)(?::(\d+))?\)$")
_COUNT = re.compile(r"^(.*) (\d+)$", re.DOTALL)


def parse_raw(text: str) -> tuple[tuple[ThreadStack, ...], dict[int, str]]:
    """Folded stacks from ``py-spy record -f raw -t -s`` -> (stacks innermost-first, pid -> command)."""
    stacks: list[ThreadStack] = []
    commands: dict[int, str] = {}
    for record in _records(text.splitlines()):
        parsed = _parse_record(record, commands)
        if parsed is not None:
            stacks.append(parsed)
    return tuple(stacks), commands


def _records(lines: Iterable[str]) -> Iterable[str]:
    pending: list[str] = []
    for line in lines:
        if _RECORD_START.match(line) and pending:
            yield "\n".join(pending)
            pending = []
        if line or pending:
            pending.append(line)
    if pending:
        yield "\n".join(pending)


def _parse_record(record: str, commands: dict[int, str]) -> ThreadStack | None:
    counted = _COUNT.match(record.rstrip())
    if counted is None:
        return None
    body, count = counted.group(1), int(counted.group(2))
    process_path, rest = _split_processes(body, commands)
    thread_part, _, frames_part = rest.partition(";")
    thread = _THREAD.match(thread_part)
    if thread is None or not process_path:
        return None
    tid = int(thread.group(1), 0)
    frames = tuple(_parse_frame(text) for text in reversed(frames_part.split(";")) if text)
    return ThreadStack(
        pid=process_path[-1],
        tid=tid,
        thread_name=thread.group(2),
        frames=frames,
        count=count,
        process_path=process_path,
    )


def _split_processes(body: str, commands: dict[int, str]) -> tuple[tuple[int, ...], str]:
    """Peel ``process N:"cmd";`` prefixes; a command line may itself hold ``;`` or quotes."""
    path: list[int] = []
    rest = body
    while True:
        match = _PROCESS.match(rest)
        if match is None:
            return tuple(path), rest
        end = _end_of_command(rest, match.end())
        if end < 0:
            return tuple(path), rest
        pid = int(match.group(1))
        commands.setdefault(pid, rest[match.end() : end])
        path.append(pid)
        rest = rest[end + 2 :]


def _end_of_command(text: str, start: int) -> int:
    """Index of the quote that closes the command: the first ``";`` followed by a process or thread."""
    position = start
    while True:
        end = text.find('";', position)
        if end < 0:
            return -1
        following = text[end + 2 :]
        if following.startswith(("process ", "thread (")):
            return end
        position = end + 1


def _parse_frame(text: str) -> Frame:
    match = _FRAME.match(text)
    if match is None:
        return Frame(name=text, filename="", line=0)
    return Frame(name=match.group(1), filename=match.group(2), line=int(match.group(3) or 0))


def parse_dump_json(text: str) -> tuple[ThreadStack, ...]:
    """Threads from ``py-spy dump --json``: one ThreadStack per thread, count 1, ``active`` known."""
    threads = json.loads(text)
    if not isinstance(threads, list):
        raise ValueError("py-spy dump --json did not print a list of threads")
    stacks = []
    for thread in threads:
        pid = int(thread["pid"])
        frames = tuple(
            Frame(
                name=str(frame.get("name", "")),
                filename=str(frame.get("filename") or ""),
                line=int(frame.get("line") or 0),
            )
            for frame in thread.get("frames", [])
        )
        tid = thread.get("os_thread_id")
        stacks.append(
            ThreadStack(
                pid=pid,
                tid=int(tid) if tid is not None else int(thread["thread_id"]),
                thread_name=thread.get("thread_name"),
                frames=frames,
                count=1,
                process_path=(pid,),
                active=bool(thread.get("active", True)),
            )
        )
    return tuple(stacks)


def parse_sample_errors(stderr: str) -> int:
    """py-spy's ``Samples: N Errors: M`` line -> M (0 if absent)."""
    match = re.search(r"Errors: (\d+)", stderr)
    return int(match.group(1)) if match else 0
