"""The child's wire: every message survives a round trip; strangers are refused; the JSON schema holds."""

from __future__ import annotations

import json

import pytest

from xfertop.bench.protocol import (
    PROTOCOL_VERSION,
    CaseDone,
    Failure,
    Hello,
    Progress,
    ProtocolError,
    RunDone,
    decode,
    encode,
    run_from_json,
    run_to_json,
)

from .builders import make_run


@pytest.mark.parametrize(
    "message",
    [
        Hello("cuda", ("pinned_nb", "d2h"), 1234),
        Progress("sweep", 0.25, "pinned H2D 1 MiB"),
        CaseDone(make_run().cases[0]),
        RunDone(make_run()),
        Failure("no CUDA GPU visible to torch: ...", 2),
    ],
)
def test_every_message_round_trips_as_one_line(message: object) -> None:
    line = encode(message)  # type: ignore[arg-type]
    assert "\n" not in line and json.loads(line)["v"] == PROTOCOL_VERSION
    assert decode(line) == message


def test_a_run_round_trips_through_its_json_file() -> None:
    run = make_run()
    assert run_from_json(run_to_json(run)) == run


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ('{"v": 99, "type": "hello"}', "version 99"),
        ('{"v": 1, "type": "launch"}', "unknown message type"),
        ("Using cache found in /root", "not JSON"),
        ("[1, 2]", "not a message"),
        ('{"v": 1, "type": "progress", "case": "x"}', "bad Progress"),
    ],
)
def test_lines_that_are_not_ours_are_refused(line: str, why: str) -> None:
    with pytest.raises(ProtocolError, match=why):
        decode(line)


def test_run_json_schema_is_stable() -> None:
    """Scripts read these keys: changing them needs a schema bump (protocol.RUN_SCHEMA)."""
    data = json.loads(run_to_json(make_run()))
    assert set(data) == {
        "schema",
        "mode",
        "started_utc",
        "wall_s",
        "machine",
        "links",
        "cases",
        "verdicts",
        "overall",
        "exit_code",
        "thresholds",
    }
    assert data["schema"] == 1
    assert set(data["cases"][1]["rows"][0]) == {
        "label",
        "direction",
        "memory",
        "size_bytes",
        "value",
        "unit",
        "samples",
        "value_min",
        "value_max",
        "warmup_value",
        "verified",
        "gpu_index",
        "extra",
    }
    assert set(data["verdicts"][0]) == {
        "check",
        "status",
        "message",
        "measured",
        "threshold_pass",
        "threshold_warn",
    }
    assert set(data["links"][0]) >= {
        "gen_current",
        "width_current",
        "gen_max",
        "width_max",
        "gen_gpu_max",
        "pstate",
        "replay_delta",
        "correctable_delta",
    }
    with pytest.raises(ProtocolError, match="schema"):
        run_from_json(json.dumps({**data, "schema": 2}))
