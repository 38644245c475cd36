"""`xfertop bench` / `xfertop check` end to end on the CPU backend: output, records, --compare, exit codes."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from xfertop.cli import bench as cli_bench

from .test_child import _cuda_usable


def _run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="xfertop")
    cli_bench.register(parser.add_subparsers())
    args = parser.parse_args(argv)
    return args.run(args)


def test_check_json_saves_a_record_and_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = _run(["check", "--backend", "cpu", "--json", "--records", str(tmp_path)])
    out, err = capsys.readouterr()
    run = json.loads(out)
    assert code == 0 and run["mode"] == "check" and run["overall"] == "pass"
    assert [c["case"] for c in run["cases"]][:2] == ["sync_baseline", "pinned_nb"]
    saved = sorted(p.suffix for p in tmp_path.iterdir())
    assert saved == [".json", ".md"] and "report saved to" in err


def test_bench_table_and_compare_with_the_last_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        _run(["bench", "--backend", "cpu", "a", "f", "--sizes", "64KiB,1MiB", "--records", str(tmp_path)])
        == 0
    )
    first = next(tmp_path.glob("*.json"))
    capsys.readouterr()
    assert (
        _run(
            [
                "bench",
                "--backend",
                "cpu",
                "a",
                "f",
                "--sizes",
                "64KiB,1MiB",
                "--no-save",
                "--compare",
                str(first),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "[sweep] size sweep" in out and "size sweep (GB/s" in out
    assert f"compared with {first}:" in out and "same conditions as the earlier run" in out


def test_a_failing_check_exits_1_and_bad_input_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        cli_bench, "child_argv", lambda args, check, cases: ["--backend", "cpu", "--cpu-corrupt", "pinned_nb"]
    )
    assert _run(["check", "--backend", "cpu", "--no-save"]) == 1
    assert "FAIL  copied data" in capsys.readouterr().out
    assert _run(["check", "--backend", "cpu", "--compare", str(tmp_path / "missing.json")]) == 2
    assert "cannot compare with" in capsys.readouterr().err


@pytest.mark.skipif(_cuda_usable(), reason="this box has a CUDA GPU")
def test_check_without_a_gpu_says_why_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["check", "--json"]) == 2
    out, err = capsys.readouterr()
    assert err.strip().startswith("xfertop check: no CUDA GPU visible to torch: ")
    assert len(err.strip().splitlines()) == 1
    assert json.loads(out)["exit_code"] == 2
