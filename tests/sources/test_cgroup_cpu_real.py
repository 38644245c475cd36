"""The cgroup CPU quota on this machine's real /proc and /sys: the answer for this test process against
what `cat` of the files gives, then a real cgroup with a 0.5-core quota (made where this user may make
one, else skipped with the reason) holding a busy job: the reader, the host source and the advice."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from analysis.window_fixtures import rank_state
from xfertop.analysis.job_analysis import analyse
from xfertop.analysis.thresholds import CGROUP_THROTTLED_SHARE
from xfertop.model.jobs import JobsState, JobState, RankState
from xfertop.sources.host.cgroup_cpu import CgroupCpuReader, read_cpu_limit
from xfertop.sources.host.source import HostSource


def _cat(path: Path | str) -> str | None:
    run = subprocess.run(["cat", str(path)], capture_output=True, text=True)
    return run.stdout if run.returncode == 0 else None


def _cpu_mount_and_path() -> tuple[int, str, str]:
    """(version, mount point, cgroup path) of this process's cpu controller, from `cat` of /proc."""
    cgroup = _cat(f"/proc/{os.getpid()}/cgroup") or ""
    mountinfo = _cat("/proc/self/mountinfo") or ""
    lines = [line.split(":", 2) for line in cgroup.splitlines()]
    v1 = [path for _, controllers, path in lines if "cpu" in controllers.split(",")]
    for line in mountinfo.splitlines():
        fields = line.split()
        after = fields[fields.index("-") + 1 :]
        if v1 and after[0] == "cgroup" and "cpu" in after[2].split(","):
            if fields[3] != "/":
                pytest.skip(f"the cpu hierarchy is mounted from {fields[3]}: not the plain layout")
            return 1, fields[4], v1[0]
        if not v1 and after[0] == "cgroup2":
            if fields[3] != "/":
                pytest.skip(f"the unified hierarchy is mounted from {fields[3]}: not the plain layout")
            return 2, fields[4], next(path for number, _, path in lines if number == "0")
    pytest.skip("no cgroup cpu controller mounted here")


def _quota_by_cat(version: int, directory: Path) -> float | None:
    if version == 2:
        text = _cat(directory / "cpu.max")
        if text is None or text.split()[0] == "max":
            return None
        quota, period = text.split()
    else:
        quota, period = _cat(directory / "cpu.cfs_quota_us"), _cat(directory / "cpu.cfs_period_us")
        if quota is None or period is None or int(quota) == -1:
            return None
    return int(quota) / int(period)


def test_this_process_quota_is_what_cat_of_its_cgroup_files_says() -> None:
    version, mount_point, path = _cpu_mount_and_path()
    leaf = Path(mount_point) / path.lstrip("/")
    chain = [leaf, *[parent for parent in leaf.parents if Path(mount_point) in (parent, *parent.parents)]]
    quotas = [q for q in (_quota_by_cat(version, d) for d in chain) if q is not None]

    limit = read_cpu_limit(os.getpid())
    assert limit is not None and limit.version == version
    assert Path(limit.cgroup_dir) == leaf
    assert limit.quota_cores == (min(quotas) if quotas else None)


@dataclasses.dataclass
class CpuCgroup:
    directory: Path
    version: int

    @property
    def quota_file(self) -> Path:
        return self.directory / ("cpu.max" if self.version == 2 else "cpu.cfs_quota_us")

    def periods(self) -> int:
        text = (self.directory / "cpu.stat").read_text()
        return next(int(line.split()[1]) for line in text.splitlines() if line.startswith("nr_periods "))

    def await_periods(self, count: int, timeout_s: float = 20.0) -> None:
        """Until ``count`` more enforcement periods passed (the kernel offers no event for them)."""
        target = self.periods() + count
        deadline = time.monotonic() + timeout_s
        while self.periods() < target:
            assert time.monotonic() < deadline, f"fewer than {count} CPU periods in {timeout_s} s"
            time.sleep(0.05)


@pytest.fixture
def half_core_cgroup() -> Iterator[CpuCgroup]:
    """A cgroup with a quota of 0.5 cores at the top of this machine's cpu hierarchy; removed after."""
    if os.geteuid() != 0:
        pytest.skip("making a cgroup needs root")
    version, mount_point, _ = _cpu_mount_and_path()
    directory = Path(mount_point) / f"xfertop_test_{os.getpid()}"
    try:
        if version == 2 and "cpu" not in (Path(mount_point) / "cgroup.subtree_control").read_text().split():
            pytest.skip("the cpu controller is not enabled for the unified hierarchy's children")
        directory.mkdir()
    except OSError as exc:
        pytest.skip(f"cannot make a cgroup in {mount_point}: {exc.strerror}")
    cgroup = CpuCgroup(directory, version)
    try:
        cgroup.quota_file.write_text("50000 100000\n" if version == 2 else "50000\n")
        if version == 1:
            (directory / "cpu.cfs_period_us").write_text("100000\n")
        yield cgroup
    finally:
        deadline = time.monotonic() + 20
        while (directory / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.05)  # the test's processes are exiting
        directory.rmdir()


def _start_in(cgroup: CpuCgroup, code: str) -> subprocess.Popen[str]:
    """A Python process that is in ``cgroup`` before it runs ``code`` (its children inherit it)."""
    return subprocess.Popen(
        ["sh", "-c", f'echo $$ > {cgroup.directory}/cgroup.procs && exec "$0" -c "$1"', sys.executable, code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_a_busy_process_in_a_half_core_cgroup_reads_its_quota_and_is_throttled(half_core_cgroup) -> None:
    spinner = _start_in(half_core_cgroup, "import sys\nprint('ready', flush=True)\nwhile True: pass")
    try:
        assert spinner.stdout is not None and spinner.stdout.readline().strip() == "ready"
        key = (spinner.pid, 0)
        reader = CgroupCpuReader(window_s=0.0)
        first = reader.read(key, time.monotonic())
        assert first is not None and first.quota_cores == 0.5
        assert first.quota_file == str(half_core_cgroup.quota_file)
        assert _cat(half_core_cgroup.quota_file) in ("50000\n", "50000 100000\n")
        half_core_cgroup.await_periods(10)
        second = reader.read(key, time.monotonic())
        assert second is not None and second.throttled_share is not None
        assert second.throttled_share >= CGROUP_THROTTLED_SHARE, "a busy loop outruns half a core"
    finally:
        spinner.kill()
        spinner.wait(timeout=30)


# A training process whose four workers each want a whole core; it exits when stdin closes, and so do its
# workers (their parent changes).
TRAINER_OF_BUSY_WORKERS = r"""
import subprocess, sys
spin = "import os\nparent = os.getppid()\nwhile os.getppid() == parent: pass"
workers = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(4)]
print("ready", flush=True)
sys.stdin.read()
"""


def _input_bound_gpu_rank() -> RankState:
    """A rank whose loader cannot keep a 30 ms step fed: 20 ms of each 50 ms step waiting for the batch,
    the GPU idle through 19 ms of it (its measured gap before each step's first work)."""
    steps = [
        {
            "step": number,
            "wall_ms": 50.0,
            "data_wait_ms": 19.6,
            "copy_cpu_ms": 0.02,
            "loop_pre_ms": 0.1,
            "sync_ms": 0.0,
            "loop_post_ms": 0.1,
            "gpu_gap_ms": 19.3,
            "h2d_bytes": 12 * 2**20,
            "samples": 256,
            "pinned": True,
            "pageable_non_blocking": False,
            "copied": True,
            "partitioned": True,
        }
        for number in range(100)
    ]
    return rank_state(0, steps, dataloader_workers=2)


def test_workers_in_a_half_core_cgroup_are_told_the_quota_not_to_add_workers(half_core_cgroup) -> None:
    trainer = _start_in(half_core_cgroup, TRAINER_OF_BUSY_WORKERS)
    try:
        assert trainer.stdout is not None and trainer.stdout.readline().strip() == "ready"
        source = HostSource()
        source.watch_pids([trainer.pid])
        source.sample_once()
        half_core_cgroup.await_periods(10)
        host = source.sample_once()
        (stats,) = host.processes
        assert len(stats.children) == 4
        assert stats.cpu_quota_cores == 0.5 and stats.cpu_quota_file == str(half_core_cgroup.quota_file)
        assert stats.cpu_throttled_share is not None and stats.cpu_throttled_share >= CGROUP_THROTTLED_SHARE

        rank = dataclasses.replace(
            _input_bound_gpu_rank(),
            pid=trainer.pid,
            host=host.hostname,
            dataloader_workers=4,
            device="cuda:0",
            heartbeat_age_s=0.0,
        )
        jobs = JobsState(timestamp=0.0, jobs=(JobState(rank.job_key, "train.py", (rank,)),), ring_dir="/x")
        verdict = analyse(jobs, None, host=host).jobs[0].verdict
        advice = " ".join(verdict.advice)
        quota_name = half_core_cgroup.quota_file.name
        assert f"The 4 DataLoader workers share a CPU quota of 0.5 cores (cgroup {quota_name})" in advice
        assert "Raise num_workers" not in advice and "prefetch_factor" not in advice
    finally:
        assert trainer.stdin is not None
        trainer.stdin.close()
        trainer.wait(timeout=30)
