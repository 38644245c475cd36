"""`xfertop probe` on real training processes: what freeing the input and the copies would buy, measured on
the unchanged script, and one clear line for every job it cannot probe."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from ring_test_tools import child_env
from xfertop.analysis.job_analysis import analyse
from xfertop.sources.jobs.source import JobsSource

#: argv[1]: seconds each of a batch's 4 samples takes to load (in the loop's process: num_workers=0);
#: argv[2]: "meta" to copy each batch to the meta device (a device that is not the host); then ~4 ms of
#: compute a step.
JOB = """
import sys, time
import torch
from torch.utils.data import DataLoader, Dataset

class Samples(Dataset):
    def __len__(self):
        return 100_000
    def __getitem__(self, index):
        time.sleep(float(sys.argv[1]))
        return torch.ones(16)

print("training", flush=True)
for batch in DataLoader(Samples(), batch_size=4):
    if sys.argv[2] == "meta":
        batch = batch.to("meta") * 2
    began = time.perf_counter()
    while time.perf_counter() - began < 0.004:
        pass
"""


def _probe(
    tmp_path: Path,
    code: str,
    *args: str,
    flags: tuple[str, ...] = (),
    launcher: tuple[str, ...] = (sys.executable,),
) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(code))
    return subprocess.run(
        [sys.executable, "-m", "xfertop", "probe", *flags, "--", *launcher, str(script), *args],
        env=child_env(tmp_path / "rings"),
        capture_output=True,
        text=True,
        timeout=180,
        # As an interactive shell hands a command over, whatever pytest was started with (a background
        # job of a script ignores SIGINT).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _json(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    return json.loads(done.stdout.splitlines()[-1])


def test_a_starved_job_is_told_what_free_input_would_buy_and_is_stopped(tmp_path: Path) -> None:
    # 4 samples x 4 ms of loading, then 4 ms of compute: about 20 ms a step, about 4.5 with input free.
    done = _probe(tmp_path, JOB, "0.004", "host", flags=("--steps", "15", "--warmup", "5", "--json"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "training"  # the job's own output first, untouched
    document = _json(done)
    assert document["schema"] == "xfertop.probe/1" and document["complete"]
    assert document["job_ended"] == "killed by SIGINT"  # the probe stopped it as a Ctrl-C would
    assert document["stopped_by"] == "probe"
    (rank,) = document["ranks"]
    assert rank["speedup_input_free"] >= 2.0, rank
    assert rank["baseline_step_s"] >= 0.015 and rank["input_free_step_s"] < rank["baseline_step_s"]


def test_a_job_not_held_up_by_its_input_gains_little(tmp_path: Path) -> None:
    done = _probe(tmp_path, JOB, "0", "host", flags=("--steps", "15", "--warmup", "5", "--json"))
    assert done.returncode == 0, done.stderr
    (rank,) = _json(done)["ranks"]
    assert rank["speedup_input_free"] <= 1.5, rank


#: A machine that slows steadily while the probe runs: each step computes 0.075 ms longer than the one
#: before (from 2 ms), and its input is free as it is (no loading in __getitem__).
DRIFTING = """
import time
import torch
from torch.utils.data import DataLoader

for step, batch in enumerate(DataLoader(torch.ones(100_000, 16), batch_size=4)):
    began = time.perf_counter()
    while time.perf_counter() - began < 0.002 + 0.000075 * step:
        pass
"""


def test_a_steady_drift_slows_every_phase_alike(tmp_path: Path) -> None:
    """Phases measured one after another would put the drift between them: "as is" in the fastest
    steps, "input free" in slower ones (0.56x here), on a job whose input is already free. In mirrored
    blocks each phase sees the same mean step (1.0x). Blocks of 20 steps (~0.1-0.3 s): a short burst of
    the machine's other work moves one block's figure little; the band leaves room for one."""
    done = _probe(tmp_path, DRIFTING, flags=("--steps", "40", "--warmup", "4", "--json"))
    assert done.returncode == 0, done.stderr
    (rank,) = _json(done)["ranks"]
    for key in ("speedup_input_free", "speedup_copy_free"):
        assert 0.75 <= rank[key] <= 1.33, rank


def test_without_warm_up_the_first_phase_is_timed_from_its_first_step(tmp_path: Path) -> None:
    done = _probe(tmp_path, JOB, "0.004", "host", flags=("--steps", "10", "--warmup", "0", "--json"))
    assert done.returncode == 0, done.stderr
    (rank,) = _json(done)["ranks"]
    # 4 samples of 4 ms and 4 ms of compute: ~20 ms a step, not the seconds since the clock's origin.
    assert 0.015 <= rank["baseline_step_s"] <= 0.2, rank


def test_the_live_verdict_of_a_probed_job_rests_on_its_own_steps_not_the_replayed(tmp_path: Path) -> None:
    done = _probe(tmp_path, JOB, "0.004", "host", flags=("--steps", "40", "--warmup", "10"))
    assert done.returncode == 0, done.stderr
    state = JobsSource(ring_dir=str(tmp_path / "rings")).sample()
    (job,) = state.jobs
    steps = job.ranks[0].steps
    assert sum(step.probe_replay for step in steps) >= 3 * 40 - 2  # the replayed steps are marked
    # As the job ran: 16 ms of loading to 4 ms of compute a step. The replayed steps alone would read
    # compute-bound; the verdict is the job's own.
    verdict = analyse(state, None).jobs[0].verdict
    assert verdict.kind == "input-bound" and verdict.evidence["data_wait_share"] >= 0.5, verdict.headline


def test_phases_can_be_timed_in_seconds(tmp_path: Path) -> None:
    done = _probe(tmp_path, JOB, "0.004", "host", flags=("--seconds", "0.3", "--warmup", "5"))
    assert done.returncode == 0, done.stderr
    assert "4 phases of 0.3 s each, after 5 steps of warm-up" in done.stdout
    done = _probe(tmp_path, JOB, "0.004", "host", flags=("--seconds", "0.3", "--warmup", "5", "--json"))
    (rank,) = _json(done)["ranks"]
    assert rank["seconds_per_phase"] == 0.3 and rank["speedup_input_free"] >= 2.0, rank
    # ~20 ms steps as is (4 samples of 4 ms, then 4 ms of compute), ~4 ms with the input free.
    assert 0.015 <= rank["baseline_step_s"] <= 0.2 and rank["input_free_step_s"] < rank["baseline_step_s"]


def test_the_copies_of_replayed_batches_are_made_once_then_handed_back(tmp_path: Path) -> None:
    done = _probe(tmp_path, JOB, "0.001", "meta", flags=("--steps", "10", "--warmup", "5", "--json"))
    assert done.returncode == 0, done.stderr
    (rank,) = _json(done)["ranks"]
    assert rank["copies_made_resident"] >= 1 and rank["copy_free_step_s"] is not None


def test_the_report_names_each_phase_and_says_it_is_a_diagnosis_run(tmp_path: Path) -> None:
    done = _probe(tmp_path, JOB, "0.004", "host", flags=("--steps", "10", "--warmup", "5"))
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert (
        "xfertop probe: train.py (pid " in text
        and "4 phases of 10 steps each, after 5 steps of warm-up" in text
    )
    assert "  as is: " in text and "  input free: " in text and "  copies free too: " in text
    # Without a GPU there is no pinned memory: the phase runs, and the report says what it was.
    assert "  pinned copies: " in text and "could not be pinned (no GPU): pinned copies is input free" in text
    assert "a diagnosis run" in text and "the job: stopped by the probe (killed by SIGINT)" in text


def test_the_report_is_kept_where_the_live_view_finds_it(tmp_path: Path) -> None:
    done = _probe(tmp_path, JOB, "0.004", "host", flags=("--steps", "10", "--warmup", "5"))
    assert done.returncode == 0, done.stderr
    kept = done.stdout.strip().splitlines()[-1]
    assert kept.startswith("  JSON: " + str(tmp_path / "rings" / "probes")), done.stdout
    (tmp_path / "rings" / "probes" / "00000000T000000-1-broken.json").write_text("{not json")
    (probe,) = JobsSource(ring_dir=str(tmp_path / "rings")).sample().probes  # the broken one passed over
    assert (
        probe.job == "train.py"
        and probe.complete
        and probe.argv[-3:]
        == (
            str(tmp_path / "train.py"),
            "0.004",
            "host",
        )
    )
    assert probe.ranks[0].speedup_input_free is not None and probe.ranks[0].speedup_input_free >= 2.0


#: Two DDP ranks on the CPU (gloo), each reading its shard of a slow dataset (num_workers=0).
DDP = """
import time
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset, DistributedSampler

class Samples(Dataset):
    def __len__(self):
        return 100_000
    def __getitem__(self, index):
        time.sleep(0.002)
        return torch.ones(16)

torch.set_num_threads(1)
dist.init_process_group("gloo")
model = DistributedDataParallel(torch.nn.Linear(16, 1))
loader = DataLoader(Samples(), batch_size=4, sampler=DistributedSampler(Samples()))
for batch in loader:
    model(batch).sum().backward()
"""


def test_each_ddp_rank_is_measured(tmp_path: Path) -> None:
    done = _probe(
        tmp_path,
        DDP,
        flags=("--steps", "8", "--warmup", "4", "--json"),
        launcher=(sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"),
    )
    assert done.returncode == 0, done.stderr
    report = _json(done)
    assert report["complete"] and sorted(rank["rank"] for rank in report["ranks"]) == ["0", "1"]
    for rank in report["ranks"]:
        assert rank["speedup_input_free"] >= 1.5, rank  # each rank waited on its own loading
    assert report["ranks_not_probed"] == []


def test_a_rank_without_a_loader_is_named_and_why(tmp_path: Path) -> None:
    # Rank 1 trains on tensors it makes itself: only rank 0 has a DataLoader to probe.
    code = DDP.replace(
        "for batch in loader:",
        "for batch in (loader if dist.get_rank() == 0 else iter(lambda: torch.ones(4, 16), None)):",
    )
    done = _probe(
        tmp_path,
        code,
        flags=("--steps", "8", "--warmup", "4"),
        launcher=(sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"),
    )
    assert done.returncode == 0, done.stderr
    assert "(rank 0)" in done.stdout and "  rank 1: not probed (it iterated no DataLoader" in done.stdout


#: An IterableDataset read by 2 workers, each sample taking 3 ms to make.
ITERABLE = """
import time
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

class Stream(IterableDataset):
    def __iter__(self):
        while True:
            time.sleep(0.003)
            yield torch.ones(16)

print("training", flush=True)
for batch in DataLoader(Stream(), batch_size=4, num_workers=2):
    began = time.perf_counter()
    while time.perf_counter() - began < 0.002:
        pass
"""


def test_an_iterable_dataset_read_by_workers_is_probed(tmp_path: Path) -> None:
    done = _probe(tmp_path, ITERABLE, flags=("--steps", "10", "--warmup", "5", "--json"))
    assert done.returncode == 0, done.stderr
    (rank,) = _json(done)["ranks"]
    assert rank["complete"] and rank["speedup_input_free"] >= 1.5, rank


def test_ctrl_c_on_the_probe_goes_to_the_job_and_ends_in_one_line(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    stepping = (
        "for n, batch in enumerate(DataLoader(Samples(), batch_size=4)):\n"
        "    if n == 1:\n"
        '        print("stepping", flush=True)'
    )
    script.write_text(
        textwrap.dedent(JOB).replace("for batch in DataLoader(Samples(), batch_size=4):", stepping)
    )
    probe = subprocess.Popen(
        [sys.executable, "-m", "xfertop", "probe", "--warmup", "100000", "--", sys.executable, str(script),
         "0.001", "host"],
        env=child_env(tmp_path / "rings"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    assert probe.stdout is not None
    assert probe.stdout.readline() == "training\n"
    assert probe.stdout.readline() == "stepping\n"  # the job is in its loop, the probe still warming up
    probe.send_signal(signal.SIGINT)
    _, stderr = probe.communicate(timeout=60)
    assert probe.returncode == 130
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("xfertop probe: train.py interrupted (killed by SIGINT) after ")
    assert last.endswith("steps, before the probe was through"), last  # no advice on --steps


NO_LOADER = """
import torch
print(torch.ones(2).sum().item())
"""

SHORT = JOB.replace("return 100_000", "return 40")  # 10 steps


def test_a_job_without_a_dataloader_is_one_line_and_exit_3(tmp_path: Path) -> None:
    done = _probe(tmp_path, NO_LOADER)
    assert done.returncode == 3 and done.stdout == "2.0\n"
    assert done.stderr.strip().endswith("before any DataLoader was iterated under xfertop: nothing to probe")


def test_a_job_that_ends_before_the_probe_is_through_says_how_far_it_came(tmp_path: Path) -> None:
    done = _probe(tmp_path, SHORT, "0", "host", flags=("--steps", "10", "--warmup", "5"))
    assert done.returncode == 3
    last = done.stderr.strip().splitlines()[-1]
    # 5 of warm-up and the first "as is" block (5) take its 10 batches; the replayed blocks (30) take
    # none; the second "as is" block's first next() finds the loader empty: 41 steps.
    assert "train.py exited 0 after 41 steps, before the probe's 45" in last, done.stderr


def test_a_job_that_ends_before_its_timed_phases_are_through_says_so(tmp_path: Path) -> None:
    done = _probe(tmp_path, SHORT, "0", "host", flags=("--seconds", "5", "--warmup", "2"))
    assert done.returncode == 3
    last = done.stderr.strip().splitlines()[-1]
    assert "exited 0 after 11 steps, before its phases of 5 s were through (it reached as_is)" in last, last
    assert last.endswith("probe with fewer --seconds or a lower --warmup")


IGNORES_SIGINT = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n" + JOB
#: A handler that swallows Ctrl-C and trains on.
SWALLOWS_SIGINT = "import signal\nsignal.signal(signal.SIGINT, lambda signum, frame: None)\n" + JOB


@pytest.mark.parametrize("code", [IGNORES_SIGINT, SWALLOWS_SIGINT], ids=["ignores", "swallows"])
def test_a_job_that_does_not_stop_on_sigint_gets_sigterm(tmp_path: Path, code: str) -> None:
    """Ignored: SIGTERM at once (from inside); caught and trained on: SIGTERM after the grace."""
    done = _probe(tmp_path, code, "0", "host", flags=("--steps", "5", "--warmup", "2", "--grace", "1"))
    assert done.returncode == 0, done.stderr
    assert "the job: stopped by the probe (killed by SIGTERM)" in done.stdout


def test_continue_lets_the_job_run_to_its_end(tmp_path: Path) -> None:
    done = _probe(
        tmp_path,
        SHORT.replace("return 40", "return 120"),
        "0",
        "host",
        flags=("--steps", "5", "--warmup", "2", "--continue"),
    )
    assert done.returncode == 0, done.stderr
    assert "the job: exited 0" in done.stdout


@pytest.mark.parametrize(
    ("command", "code", "words"),
    [
        (["no-such-command-xfertop"], 127, "no-such-command-xfertop: command not found"),
        ([], 2, "no command given"),
        # A command that is not Python runs, and there is nothing in it to probe.
        (["true"], 3, "true exited 0 before any DataLoader was iterated under xfertop: nothing to probe"),
    ],
)
def test_a_command_that_cannot_run_is_one_line(command: list[str], code: int, words: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "xfertop", "probe", "--", *command], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == code and words in done.stderr and done.stderr.count("\n") == 1


def test_seconds_that_are_not_positive_are_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "xfertop", "probe", "--seconds", "0", "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "--seconds more than 0" in done.stderr and done.stderr.count("\n") == 1
