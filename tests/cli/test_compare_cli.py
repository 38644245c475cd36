"""`xfertop compare BEFORE AFTER` at the command line, on the summaries of two real `xfertop run` jobs: a
loop starved by a slow ``__getitem__`` in the main process, then the same loop with the slowness fixed."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ring_test_tools import child_env

XFERTOP = [sys.executable, "-m", "xfertop"]

#: argv[1]: seconds each sample takes to load. 120 steps of 20 ms of compute each: fetching a free sample
#: in the main process (~0.3 ms, 1.3 ms with two busy loops on a 2-core machine) is then no bottleneck,
#: even on a loaded machine. (At 10 ms a step that load made the fed job 11% data wait: input-bound.)
JOB = """
import sys, time
import torch
from torch.utils.data import DataLoader, Dataset

class Slow(Dataset):
    def __len__(self):
        return 120
    def __getitem__(self, index):
        time.sleep(float(sys.argv[1]))
        return torch.ones(4)

for batch in DataLoader(Slow(), batch_size=1):
    began = time.perf_counter()
    while time.perf_counter() - began < 0.020:
        pass
"""


def _summary_of(tmp_path: Path, name: str, load_s: str) -> Path:
    script = tmp_path / f"{name}.py"
    script.write_text(textwrap.dedent(JOB))
    done = subprocess.run(
        [*XFERTOP, "run", "--", sys.executable, str(script), load_s],
        env=child_env(tmp_path / "rings"),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    [path] = [line.split("JSON: ", 1)[1] for line in done.stderr.splitlines() if line.startswith("  JSON: ")]
    return Path(path)


@pytest.fixture(scope="module")
def before_and_after(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp_path = tmp_path_factory.mktemp("compare")
    return _summary_of(tmp_path, "starved", "0.016"), _summary_of(tmp_path, "fixed", "0")


def _compare(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*XFERTOP, "compare", *map(str, args)], capture_output=True, text=True, timeout=60)


def test_the_table_shows_the_speed_up_the_wait_it_removed_and_both_verdicts(
    before_and_after: tuple[Path, Path],
) -> None:
    before, after = before_and_after
    done = _compare(before, after)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("xfertop compare: starved.py (") and "-> fixed.py (" in lines[0]
    rates = next(line for line in lines if line.startswith("samples/s"))
    assert float(rates.split("x")[-1]) >= 1.5, rates  # 16 ms of loading gone from a ~36 ms step
    wait = next(line for line in lines if line.startswith("data wait"))
    assert wait.endswith(" pts") and int(wait.split()[-2]) <= -30, wait
    assert any(line.startswith("verdict before: input-bound") for line in lines), done.stdout
    assert any(line.startswith("verdict after: ") and "input-bound" not in line for line in lines), (
        done.stdout
    )


def test_json_gives_every_row_with_its_change(before_and_after: tuple[Path, Path]) -> None:
    before, after = before_and_after
    done = _compare(before, after, "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["schema"] == "xfertop.compare/1"
    rows = {row["name"]: row for row in document["rows"]}
    assert list(rows)[:3] == ["samples/s", "step time", "data wait"]
    assert rows["step time"]["after"] < rows["step time"]["before"]
    assert rows["samples/s"]["change"].startswith("x")
    assert document["before"]["verdict"]["kind"] == "input-bound"


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (None, "no such file"),
        ("{not json", "is not JSON"),
        ('{"schema": "xfertop.snapshot/1"}', "is not an xfertop run summary"),
        ('{"schema": "xfertop.run-summary/1", "steps": 0, "shares": null}', "saw no training step"),
    ],
    ids=["missing", "not-json", "other-json", "no-steps"],
)
def test_a_file_that_cannot_be_compared_is_one_line_and_exit_2(
    tmp_path: Path, before_and_after: tuple[Path, Path], content: str | None, words: str
) -> None:
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content)
    done = _compare(before_and_after[0], bad)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"xfertop compare: {bad}") and words in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_a_shares_change_agrees_with_the_shares_shown() -> None:
    # 0.70% -> 1.33% shows as 1% and 1%: no change; 5.2% -> 8.7% as 5% and 9%: +4 pts, not +3.
    from xfertop.launch.compare import Row

    assert Row("loop", "share", 0.0070, 0.0133).change == "="
    assert Row("model", "share", 0.052, 0.087).change == "+4 pts"
