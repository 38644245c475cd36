"""The real child process through the real client: CPU backend for the protocol, this box for no-GPU."""

from __future__ import annotations

import sys

import pytest

from xfertop.bench.client import BenchClient
from xfertop.bench.protocol import CaseDone, Failure, Hello, Progress, RunDone


def _cuda_usable() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def test_cpu_run_streams_hello_progress_cases_then_the_run() -> None:
    client = BenchClient(["--backend", "cpu", "--samples", "3", "pinned_nb", "d2h", "trap"])
    messages = list(client.messages())
    assert isinstance(messages[0], Hello) and messages[0].cases == ("pinned_nb", "d2h", "trap")
    assert any(isinstance(m, Progress) and m.case == "d2h" and m.fraction == 1.0 for m in messages)
    done = [m.result for m in messages if isinstance(m, CaseDone)]
    assert [c.case for c in done] == ["pinned_nb", "d2h", "trap"]
    assert done[2].skipped_reason == "needs the CUDA backend"
    assert all(r.verified and len(r.samples) == 3 and r.warmup_value for c in done[:2] for r in c.rows)
    assert isinstance(messages[-1], RunDone)
    assert client.outcome is not None and client.outcome.exit_code == 0


def test_a_corrupted_copy_is_caught_and_exits_1() -> None:
    outcome = BenchClient(["--backend", "cpu", "--cpu-corrupt", "pinned_nb"]).run_to_end()
    assert outcome.exit_code == 1
    assert isinstance(outcome.final, RunDone)
    assert outcome.final.run.cases[0].rows[0].verified is False
    assert outcome.final.run.overall == "fail"


def test_out_of_memory_exits_2_with_one_line() -> None:
    outcome = BenchClient(["--backend", "cpu", "--size", "100000GiB", "pinned_nb"]).run_to_end()
    assert outcome.exit_code == 2
    assert isinstance(outcome.final, Failure)
    assert outcome.final.reason.startswith("out of memory in case pinned_nb")
    assert "\n" not in outcome.final.reason


def test_too_few_samples_or_unknown_cases_cannot_run() -> None:
    assert BenchClient(["--backend", "cpu", "--samples", "2"]).run_to_end().exit_code == 2
    outcome = BenchClient(["--backend", "cpu", "nosuchcase"]).run_to_end()
    assert isinstance(outcome.final, Failure) and "unknown case 'nosuchcase'" in outcome.final.reason


def test_cancel_stops_a_running_child() -> None:
    client = BenchClient(["--backend", "cpu", "--samples", "100000", "sweep"])
    seen = []
    for message in client.messages():
        seen.append(message)
        if isinstance(message, Hello):
            client.cancel()
    assert isinstance(seen[-1], Failure) and seen[-1].reason == "cancelled"
    assert client.outcome is not None and client.outcome.exit_code == 2
    assert client._proc is not None and client._proc.returncode is not None


def test_cancel_before_start_never_starts_the_child() -> None:
    client = BenchClient(["--backend", "cpu"])
    client.cancel()
    assert [m.reason for m in client.messages() if isinstance(m, Failure)] == ["cancelled"]
    assert client._proc is None


def test_a_child_that_dies_or_babbles_becomes_a_failure() -> None:
    dead = BenchClient([])
    dead.argv = [sys.executable, "-c", "import sys; sys.stderr.write('Segmentation fault\\n'); sys.exit(139)"]
    outcome = dead.run_to_end()
    assert isinstance(outcome.final, Failure) and outcome.exit_code == 2
    assert (
        outcome.final.reason == "the benchmark process ended without a result (exit 139): Segmentation fault"
    )
    babbler = BenchClient([])
    babbler.argv = [sys.executable, "-c", "print('hello from a library')"]
    outcome = babbler.run_to_end()
    assert isinstance(outcome.final, Failure) and "spoke garbage" in outcome.final.reason


@pytest.mark.skipif(_cuda_usable(), reason="this box has a CUDA GPU")
def test_no_gpu_here_exits_2_with_the_reason() -> None:
    outcome = BenchClient(["--check"]).run_to_end()
    assert outcome.exit_code == 2
    assert isinstance(outcome.final, Failure)
    assert outcome.final.reason.startswith("no CUDA GPU visible to torch: ")
