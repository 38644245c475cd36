"""One reading of /proc/<pid>/stat (xfertop.procfs.split_stat) under five views: each view gives, on any
input, what its own parser gave before they shared one. The references below are those parsers as they
were (commit ba94314), kept verbatim but for reading from bytes instead of a file."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from xfertop import wire
from xfertop.procfs import run_delay_ns, split_stat
from xfertop.sources.gpu import gpu_facts
from xfertop.sources.host import proc_placement
from xfertop.sources.host import source as host
from xfertop.sources.host.proc_placement import _PROCESSOR_FIELD, ProcStat
from xfertop.sources.host.source import _CLOCK_TICKS, _Stat

# -- the five parsers as they were ---------------------------------------------------------------


def old_parse_stat(text: str) -> ProcStat | None:
    head, sep, tail = text.rpartition(")")
    if not sep or "(" not in head:
        return None
    comm = head.split("(", 1)[1]
    fields = tail.split()
    try:
        ppid = int(fields[1])
    except (IndexError, ValueError):
        return None
    index = _PROCESSOR_FIELD - 3
    processor = int(fields[index]) if len(fields) > index and fields[index].lstrip("-").isdigit() else None
    return ProcStat(comm=comm, ppid=ppid, processor=processor)


def old_stat_ppid(data: bytes) -> int | None:
    rpar = data.rfind(b")")
    if rpar < 0 or b"(" not in data[:rpar]:
        return None
    fields = data[rpar + 1 :].split(None, 2)
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return None


def old_parse_process_stat(data: bytes) -> _Stat | None:
    rpar = data.rfind(b")")
    fields = data[rpar + 2 :].split()
    if rpar < 0 or len(fields) < 20:
        return None
    try:
        cpu_s = float(fields[11]) / _CLOCK_TICKS + float(fields[12]) / _CLOCK_TICKS
        return _Stat(
            comm=data[data.find(b"(") + 1 : rpar],
            ppid=int(fields[1]),
            cpu_s=cpu_s,
            start_ticks=int(fields[19]),
            threads=int(fields[17]) if fields[17].isdigit() else None,
        )
    except ValueError:
        return None


def old_start_ticks(text: bytes) -> int:
    return int(text[text.rindex(b")") + 2 :].split()[19])


def old_identity(text: bytes) -> bytes | None:
    close = text.rfind(b")")
    fields = text[close + 2 :].split()
    if close < 0 or len(fields) < 47 or fields[0] == b"Z":
        return None
    return b" ".join((text[: close + 1], fields[19], fields[45], fields[46]))


# -- the new views, fed the same bytes -------------------------------------------------------------


def new_start_ticks(data: bytes, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> int:
    (tmp_path / "stat").write_bytes(data)
    real_open = open
    monkeypatch.setattr("builtins.open", lambda path, mode="r": real_open(tmp_path / "stat", mode))
    try:
        return wire.process_start_ticks(1)
    finally:
        monkeypatch.undo()


def new_identity(data: bytes, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> bytes | None:
    (tmp_path / "stat").write_bytes(data)
    real_read = gpu_facts.read_proc_file
    monkeypatch.setattr(gpu_facts, "read_proc_file", lambda path: real_read(str(tmp_path / "stat")))
    try:
        return gpu_facts._identity(1)
    finally:
        monkeypatch.undo()


# -- inputs ----------------------------------------------------------------------------------------


def _live_stats() -> list[bytes]:
    found = [Path("/proc/self/stat").read_bytes()]
    for name in sorted(os.listdir("/proc"), key=lambda n: (len(n), n))[:400]:
        if name.isdigit():
            with contextlib.suppress(OSError):
                found.append(Path(f"/proc/{name}/stat").read_bytes())
    return found


def _inputs() -> list[bytes]:
    live = _live_stats()
    tail = live[0][live[0].rindex(b")") + 1 :]
    fields = tail.split()
    counting = b" ".join(b"%d" % n for n in range(2, 60))
    made = [
        b"",
        b")",
        b"(",
        b"()",
        b"1",
        b"1 (a",
        b"1 a) S 1",
        b"1 a) S (x 2",
        b"1 (a)",
        b"1 (a) ",
        b"1 ()) S 1",
        b"1 (a)X 5 6",
        b"1 (a)XY 5 6",
        b"1 (a)\t5 6",
        b"1 (a)\n",
        b"(a)(b)",
        b"1 (a) Z 5" + b" 0" * 50,
        b"1 (a) \xff\xfe 5",
        b"1 (a) S +5 1_0 -7 --3",
        b"1 (a) S \xd9\xa1\xd9\xa2" + b" 3" * 50,
        b"1 (a) S 2" + b" x" * 50,
        b"1 (a) S 2" + b" -1" * 50,
        b"1 (a) S 2" + b" 1.5" * 50,
        b"1 (a) S 2" + b" 1e3" * 50,
        b"1 (a) S 2" + b" \xc2\xb2" * 50,
        b"1 (a)S " + counting,
        b"1 (a)SX " + counting,
        b"1 (a)\tS " + counting,
        b"1 (a) Z " + counting,
    ]
    for comm in (b"a", b"a b", b"(a) b)", b")", b"(", b"a) (b c) 7", b"a\xffb", b" ) ( ", b"S 1 2"):
        for count in range(53):
            made.append(b"4242 (" + comm + b") " + b" ".join(fields[:count]) + b"\n")
            made.append(b"4242 (" + comm + b") " + b" ".join(fields[:count]))
        made.append(b"4242 (" + comm + b") Z " + b" ".join(fields[1:]))
    return live + made


INPUTS = _inputs()
TEXTS = [data.decode("utf-8", "surrogateescape") for data in INPUTS] + [
    "1 (a) S \u0661\u0662" + " 3" * 50,
    "1 (a) S\u20035 6",
    "1 (a) S \u00b2 1" + " \u00b2" * 50,
    "1 (a)\u00852 3",
    "1 (a) S 1" + " --5" * 50,
    "1 (a) S 1" + " -5" * 50,
    "1 (\u00e9) S 7" + " 8" * 50,
    "1 (a) S 1" + " 2" * 35 + " \u0663" + " 4" * 20,
]


def _outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", call()
    except Exception as error:  # the kind of failure is part of the behaviour compared
        return "raised", type(error)


def test_inputs_cover_the_edges() -> None:
    assert len(INPUTS) > 500 and any(f == b"Z" for data in INPUTS for f in data.split()[2:3])


@pytest.mark.parametrize("data", INPUTS)
def test_byte_views_match_their_old_parsers(
    data: bytes, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert _outcome(lambda: proc_placement._stat_ppid(data)) == _outcome(lambda: old_stat_ppid(data))
    assert _outcome(lambda: host._parse_process_stat(data)) == _outcome(lambda: old_parse_process_stat(data))
    assert _outcome(lambda: new_start_ticks(data, monkeypatch, tmp_path)) == _outcome(
        lambda: old_start_ticks(data)
    )
    assert _outcome(lambda: new_identity(data, monkeypatch, tmp_path)) == _outcome(lambda: old_identity(data))


@pytest.mark.parametrize("text", TEXTS)
def test_parse_stat_matches_its_old_parser_on_text(text: str) -> None:
    assert _outcome(lambda: proc_placement.parse_stat(text)) == _outcome(lambda: old_parse_stat(text))


def test_parse_stat_takes_text_and_refuses_bytes_as_before() -> None:
    data = Path("/proc/self/stat").read_bytes()
    assert _outcome(lambda: proc_placement.parse_stat(data)) == _outcome(lambda: old_parse_stat(data))  # type: ignore[arg-type]


def test_the_name_runs_to_the_last_parenthesis() -> None:
    assert split_stat(b"7 ((a) b)) S 1") == (b"7 ((a) b)", b"(a) b)", b" S 1")
    assert split_stat("7 (x) S 1") == ("7 (x", "x", " S 1")
    assert split_stat(b"7 x) S 1") == (b"7 x", None, b" S 1")
    assert split_stat(b"7 (x S 1") is None and split_stat(b"") is None


def test_live_start_ticks_agree_with_the_host_view() -> None:
    data = Path("/proc/self/stat").read_bytes()
    assert wire.process_start_ticks() == host._parse_process_stat(data).start_ticks  # type: ignore[union-attr]


def test_the_run_delay_is_schedstats_second_field_and_a_malformed_one_is_none() -> None:
    assert run_delay_ns(b"1198233 130645 2\n") == 130645
    assert run_delay_ns(Path("/proc/self/schedstat").read_bytes()) is not None  # the live file's shape
    assert (
        run_delay_ns(b"1198233\n") is None and run_delay_ns(b"1 -5 2") is None and run_delay_ns(b"") is None
    )
    # A kernel that keeps no scheduler statistics prints zeros: unknown, not "never waited for a CPU"; a
    # thread just started may show no CPU time yet beside a real run delay.
    assert (
        run_delay_ns(b"0 0 0\n") is None
        and run_delay_ns(b"0 2788530 1\n") == 2788530
        and (run_delay_ns(b"5 0 1\n") == 0)
    )
