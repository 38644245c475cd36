"""A process's cgroup CPU quota and throttling, read from real directory trees laid out as the kernel
lays out /proc and /sys/fs/cgroup: cgroup v2, v1, the hybrid of both, nested quotas, "max", malformed
and missing files, cgroup namespaces, an unreadable file, a process that exited."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from xfertop.sources.host.cgroup_cpu import (
    CgroupCpuReader,
    ThrottleCounters,
    parse_cfs_quota,
    parse_cpu_max,
    parse_mountinfo,
    parse_proc_cgroup,
    parse_throttle_counters,
    quota_used_share,
    read_cpu_limit,
    read_throttle_counters,
    throttled_share,
)

PID = 4242
V2_MOUNT = (
    "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"
)
#: This VM's layout: each v1 controller on its own mount, and an empty unified hierarchy beside them.
HYBRID_MOUNTS = (
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
)
V1_CPU_CPUACCT = (
    "30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:11 - cgroup cgroup "
    "rw,cpu,cpuacct\n"
)
V2_STAT = (
    "usage_usec 9000\nuser_usec 8000\nsystem_usec 1000\nnr_periods 50\nnr_throttled 20\nthrottled_usec 7\n"
)
V1_STAT = "nr_periods 30\nnr_throttled 3\nthrottled_time 123456\n"


def _tree(tmp_path: Path, cgroup: str, mountinfo: str, files: dict[str, str]) -> tuple[Path, Path]:
    """(proc root, filesystem root) of a tree in which process PID has this /proc/<pid>/cgroup, the
    reader this mountinfo, and the files below the filesystem root hold these texts."""
    proc = tmp_path / "proc"
    (proc / str(PID)).mkdir(parents=True)
    (proc / str(PID) / "cgroup").write_text(cgroup)
    (proc / "self").mkdir()
    (proc / "self" / "mountinfo").write_text(mountinfo)
    for relative, text in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return proc, tmp_path


def test_a_v2_quota_of_two_cores_is_read_from_cpu_max(tmp_path: Path) -> None:
    proc, root = _tree(
        tmp_path,
        "0::/system.slice/train.scope\n",
        V2_MOUNT,
        {
            "sys/fs/cgroup/system.slice/train.scope/cpu.max": "200000 100000\n",
            "sys/fs/cgroup/system.slice/train.scope/cpu.stat": V2_STAT,
            "sys/fs/cgroup/system.slice/cpu.max": "max 100000\n",
        },
    )
    limit = read_cpu_limit(PID, proc, root)
    assert limit is not None and limit.version == 2
    assert limit.quota_cores == 2.0
    assert limit.quota_file == str(root / "sys/fs/cgroup/system.slice/train.scope/cpu.max")
    assert limit.stat_file == str(root / "sys/fs/cgroup/system.slice/train.scope/cpu.stat")


def test_the_smallest_quota_on_the_path_up_to_the_root_is_the_processs(tmp_path: Path) -> None:
    base = "sys/fs/cgroup/kubepods.slice/pod1"
    proc, root = _tree(
        tmp_path,
        "0::/kubepods.slice/pod1/container\n",
        V2_MOUNT,
        {
            f"{base}/container/cpu.max": "max 100000\n",  # no limit of its own
            f"{base}/cpu.max": "150000 100000\n",  # the pod: 1.5 cores
            "sys/fs/cgroup/kubepods.slice/cpu.max": "400000 100000\n",
        },
    )
    limit = read_cpu_limit(PID, proc, root)
    assert limit is not None and limit.quota_cores == 1.5
    assert limit.quota_file == str(root / base / "cpu.max")
    assert limit.stat_file == str(root / base / "cpu.stat"), "the counters of the cgroup that binds"


def test_max_everywhere_is_no_quota_but_a_known_cgroup(tmp_path: Path) -> None:
    proc, root = _tree(
        tmp_path,
        "0::/user.slice/session.scope\n",
        V2_MOUNT,
        {
            "sys/fs/cgroup/user.slice/session.scope/cpu.max": "max 100000\n",
            "sys/fs/cgroup/user.slice/cpu.max": "max 100000\n",
        },
    )
    limit = read_cpu_limit(PID, proc, root)
    assert limit is not None and limit.quota_cores is None and limit.stat_file is None


def test_malformed_quota_files_are_skipped_and_the_others_still_count(tmp_path: Path) -> None:
    proc, root = _tree(
        tmp_path,
        "0::/a/b/c\n",
        V2_MOUNT,
        {
            "sys/fs/cgroup/a/b/c/cpu.max": "lots 100000\n",
            "sys/fs/cgroup/a/b/cpu.max": "300000 0\n",
            "sys/fs/cgroup/a/cpu.max": "50000 100000\n",
        },
    )
    limit = read_cpu_limit(PID, proc, root)
    assert limit is not None and limit.quota_cores == 0.5
    for text in ("", "200000", "200000 100000 7", "-5 100000", "max", "0 100000"):
        with pytest.raises(ValueError):
            parse_cpu_max(text)


def test_a_cgroup_without_the_cpu_controller_has_no_cpu_max_and_no_quota(tmp_path: Path) -> None:
    proc, root = _tree(
        tmp_path, "0::/init.scope\n", V2_MOUNT, {"sys/fs/cgroup/init.scope/cgroup.procs": "1\n"}
    )
    limit = read_cpu_limit(PID, proc, root)
    assert limit is not None and limit.quota_cores is None


def test_a_v1_quota_is_cfs_quota_over_cfs_period_on_the_cpu_controllers_mount(tmp_path: Path) -> None:
    job = "sys/fs/cgroup/cpu,cpuacct/slurm/uid_1000/job_7"
    proc, root = _tree(
        tmp_path,
        "12:memory:/slurm/uid_1000/job_7\n4:cpu,cpuacct:/slurm/uid_1000/job_7\n1:name=systemd:/\n",
        V1_CPU_CPUACCT,
        {
            f"{job}/cpu.cfs_quota_us": "300000\n",
            f"{job}/cpu.cfs_period_us": "100000\n",
            f"{job}/cpu.stat": V1_STAT,
            "sys/fs/cgroup/cpu,cpuacct/slurm/uid_1000/cpu.cfs_quota_us": "-1\n",
            "sys/fs/cgroup/cpu,cpuacct/slurm/uid_1000/cpu.cfs_period_us": "100000\n",
        },
    )
    limit = read_cpu_limit(PID, proc, root)
    assert limit is not None and limit.version == 1
    assert limit.quota_cores == 3.0 and limit.quota_file == str(root / job / "cpu.cfs_quota_us")
    assert parse_cfs_quota("-1\n", "100000\n") is None
    for quota, period in (("0", "100000"), ("-7", "100000"), ("100000", "0"), ("x", "100000")):
        with pytest.raises(ValueError):
            parse_cfs_quota(quota, period)


def test_on_a_hybrid_host_the_v1_cpu_controller_wins_over_the_empty_unified_hierarchy(tmp_path: Path) -> None:
    # This VM: "1:cpu:/..." beside "0::/"; cpuacct is mounted on its own and must not be taken for cpu.
    proc, root = _tree(
        tmp_path,
        "9:name=systemd:/\n2:cpuacct:/\n1:cpu:/xfertop\n0::/\n",
        HYBRID_MOUNTS,
        {
            "sys/fs/cgroup/cpu/xfertop/cpu.cfs_quota_us": "50000\n",
            "sys/fs/cgroup/cpu/xfertop/cpu.cfs_period_us": "100000\n",
            "sys/fs/cgroup/cpuacct/xfertop/cpu.cfs_quota_us": "100000\n",
            "sys/fs/cgroup/cpuacct/xfertop/cpu.cfs_period_us": "100000\n",
            "sys/fs/cgroup/unified/cpu.max": "100000 100000\n",
        },
    )
    limit = read_cpu_limit(PID, proc, root)
    assert limit is not None and limit.version == 1 and limit.quota_cores == 0.5


def test_a_v2_only_host_uses_the_unified_line(tmp_path: Path) -> None:
    proc, root = _tree(
        tmp_path,
        "0::/job\n",
        HYBRID_MOUNTS.replace("rw,cpu\n", "rw,cpuset\n"),  # no v1 cpu controller anywhere
        {"sys/fs/cgroup/unified/job/cpu.max": "100000 100000\n"},
    )
    limit = read_cpu_limit(PID, proc, root)
    assert limit is not None and limit.version == 2 and limit.quota_cores == 1.0


def test_a_mount_of_a_subtree_maps_the_path_below_its_root(tmp_path: Path) -> None:
    # A container without its own cgroup namespace (docker on v1): its mount shows /docker/abc only.
    mountinfo = "700 690 0:29 /docker/abc /sys/fs/cgroup/cpu ro,nosuid - cgroup cgroup rw,cpu\n"
    proc, root = _tree(
        tmp_path,
        "1:cpu:/docker/abc/worker\n",
        mountinfo,
        {
            "sys/fs/cgroup/cpu/worker/cpu.cfs_quota_us": "-1\n",
            "sys/fs/cgroup/cpu/worker/cpu.cfs_period_us": "100000\n",
            "sys/fs/cgroup/cpu/cpu.cfs_quota_us": "200000\n",
            "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n",
        },
    )
    limit = read_cpu_limit(PID, proc, root)
    assert limit is not None and limit.quota_cores == 2.0
    assert limit.cgroup_dir == str(root / "sys/fs/cgroup/cpu/worker")
    assert limit.quota_file == str(root / "sys/fs/cgroup/cpu/cpu.cfs_quota_us")


def test_of_two_mounts_of_one_hierarchy_the_one_whose_root_is_deepest_maps_the_path(tmp_path: Path) -> None:
    mountinfo = (
        "30 25 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
        "31 25 0:30 /jobs/j1 /run/j1-cgroup rw - cgroup2 cgroup2 rw\n"
    )
    proc, root = _tree(
        tmp_path,
        "0::/jobs/j1/rank0\n",
        mountinfo,
        {"run/j1-cgroup/rank0/cpu.max": "100000 100000\n", "run/j1-cgroup/cpu.max": "400000 100000\n"},
    )
    limit = read_cpu_limit(PID, proc, root)
    assert limit is not None and limit.cgroup_dir == str(root / "run/j1-cgroup/rank0")
    assert limit.quota_cores == 1.0


def test_a_path_of_another_cgroup_namespace_is_unknown_or_found_where_it_lies(tmp_path: Path) -> None:
    mountinfo = "700 690 0:30 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
    files = {"sys/fs/cgroup/cpu.max": "100000 100000\n", "sys/fs/cgroup/inner/cpu.max": "50000 100000\n"}
    # A process outside the reader's namespace: its path climbs out of it.
    proc, root = _tree(tmp_path, "0::/../../other/pod\n", mountinfo, files)
    assert read_cpu_limit(PID, proc, root) is None
    # A path not below the mount's root (a mount made in another namespace): taken where it lies if there.
    (proc / str(PID) / "cgroup").write_text("0::/inner\n")
    limit = read_cpu_limit(PID, proc, root)
    assert limit is not None and limit.quota_cores == 0.5
    (proc / str(PID) / "cgroup").write_text("0::/elsewhere/job\n")
    assert read_cpu_limit(PID, proc, root) is None


def test_missing_pieces_give_none_never_an_exception(tmp_path: Path) -> None:
    proc, root = _tree(tmp_path, "0::/gone\n", V2_MOUNT, {})
    assert read_cpu_limit(PID, proc, root) is None, "its cgroup directory is not there"
    assert read_cpu_limit(PID + 1, proc, root) is None, "a process that exited"
    (proc / str(PID) / "cgroup").write_text("garbage\n\n:::\n")
    assert read_cpu_limit(PID, proc, root) is None, "no cgroup line"
    (proc / str(PID) / "cgroup").write_text("4:cpu,cpuacct:/job\n")
    assert read_cpu_limit(PID, proc, root) is None, "a v1 cpu line with no v1 cpu mount"
    (proc / "self" / "mountinfo").unlink()
    assert read_cpu_limit(PID, proc, root) is None, "no mountinfo"


def test_mountinfo_escapes_and_odd_lines() -> None:
    text = (
        r"30 25 0:26 / /sys/fs/cgroup/my\040cpu rw shared:1 master:2 - cgroup cgroup rw,cpu" + "\n"
        "31 25 0:27 / /mnt rw - ext4 /dev/sda1 rw\n"
        "short line\n"
        "32 25 0:28 / /sys/fs/cgroup rw - cgroup2\n"  # no source, no super options
    )
    mounts = parse_mountinfo(text)
    assert [m.mount_point for m in mounts] == ["/sys/fs/cgroup/my cpu", "/sys/fs/cgroup"]
    assert mounts[0].version == 1 and "cpu" in mounts[0].controllers and mounts[1].version == 2
    lines = parse_proc_cgroup("4:cpu,cpuacct:/a:b\n0::/\nnonsense\nx:cpu:/\n")
    assert [(line.hierarchy_id, sorted(line.controllers), line.path) for line in lines] == [
        (4, ["cpu", "cpuacct"], "/a:b"),
        (0, [], "/"),
    ]


def test_throttle_counters_of_v1_and_v2_and_the_share_between_two_readings() -> None:
    assert parse_throttle_counters(V2_STAT) == ThrottleCounters(50, 20, 9000)
    assert parse_throttle_counters(V1_STAT) == ThrottleCounters(30, 3)
    assert parse_throttle_counters("usage_usec 5\nuser_usec 4\n") is None, "v2 without the cpu controller"
    assert throttled_share(ThrottleCounters(10, 2), ThrottleCounters(30, 12)) == 0.5
    assert throttled_share(ThrottleCounters(10, 2), ThrottleCounters(10, 2)) is None, "no period ran"
    assert throttled_share(ThrottleCounters(10, 2), ThrottleCounters(5, 0)) is None, "counters went back"


def test_the_cpu_time_against_the_quota_comes_from_v2_usage_usec_or_v1_cpuacct_usage(tmp_path: Path) -> None:
    assert parse_throttle_counters("usage_usec 9000\nnr_periods 50\nnr_throttled 20\n") == ThrottleCounters(
        50, 20, 9000
    )
    # 1.5 s of CPU in 1 s against a 2-core quota: 75% of it.
    before, after = ThrottleCounters(10, 2, 1_000_000), ThrottleCounters(20, 8, 2_500_000)
    assert quota_used_share(before, after, 1.0, 2.0) == pytest.approx(0.75)
    assert quota_used_share(ThrottleCounters(10, 2), after, 1.0, 2.0) is None, "usage unknown"
    assert quota_used_share(after, before, 1.0, 2.0) is None, "the counter went back"
    assert quota_used_share(before, after, 0.0, 2.0) is None, "no time passed"
    # v1: cpu.stat has no usage; cpuacct.usage (ns) beside it where cpuacct shares the cpu mount.
    v1 = tmp_path / "cpu,cpuacct" / "job"
    v1.mkdir(parents=True)
    (v1 / "cpu.stat").write_text("nr_periods 30\nnr_throttled 3\nthrottled_time 100\n")
    assert read_throttle_counters(str(v1 / "cpu.stat")) == ThrottleCounters(30, 3, None)
    (v1 / "cpuacct.usage").write_text("123456789\n")
    assert read_throttle_counters(str(v1 / "cpu.stat")) == ThrottleCounters(30, 3, 123456)
    (v1 / "cpuacct.usage").write_text("garbage\n")
    assert read_throttle_counters(str(v1 / "cpu.stat")) == ThrottleCounters(30, 3, None)


def test_the_reader_gives_the_quota_used_over_the_same_span_as_the_throttling(tmp_path: Path) -> None:
    leaf = "sys/fs/cgroup/job"
    proc, root = _tree(
        tmp_path,
        "0::/job\n",
        V2_MOUNT,
        {
            f"{leaf}/cpu.max": "200000 100000\n",
            f"{leaf}/cpu.stat": "usage_usec 0\nnr_periods 100\nnr_throttled 0\n",
        },
    )
    reader = CgroupCpuReader(proc, root, refresh_s=100.0, window_s=4.0)
    first = reader.read((PID, 77), now=0.0)
    assert first is not None and first.used_share is None, "one reading: no span yet"
    # 2 s later: 3 s of CPU against 2 cores x 2 s, throttled in 10 of 20 periods: bursts.
    (tmp_path / leaf / "cpu.stat").write_text("usage_usec 3000000\nnr_periods 120\nnr_throttled 10\n")
    second = reader.read((PID, 77), now=2.0)
    assert second is not None and second.used_share == pytest.approx(0.75)
    assert second.throttled_share == pytest.approx(0.5)


def test_the_reader_keeps_the_quota_until_its_refresh_and_reads_the_counters_every_time(
    tmp_path: Path,
) -> None:
    leaf = "sys/fs/cgroup/job"
    proc, root = _tree(
        tmp_path,
        "0::/job\n",
        V2_MOUNT,
        {f"{leaf}/cpu.max": "200000 100000\n", f"{leaf}/cpu.stat": "nr_periods 100\nnr_throttled 0\n"},
    )
    reader = CgroupCpuReader(proc, root, refresh_s=10.0, window_s=4.0)
    key = (PID, 77)
    first = reader.read(key, now=0.0)
    assert first is not None and first.quota_cores == 2.0 and first.throttled_share is None
    (tmp_path / leaf / "cpu.max").write_text("100000 100000\n")
    (tmp_path / leaf / "cpu.stat").write_text("nr_periods 110\nnr_throttled 4\n")
    second = reader.read(key, now=2.0)
    assert second is not None and second.quota_cores == 2.0, "the quota is read again only after 10 s"
    assert second.throttled_share == 0.4
    (tmp_path / leaf / "cpu.stat").write_text("nr_periods 150\nnr_throttled 44\n")
    third = reader.read(key, now=5.0)
    assert third is not None and third.throttled_share == pytest.approx(44 / 50), "since the 4 s-old base"
    (tmp_path / leaf / "cpu.stat").write_text("nr_periods 200\nnr_throttled 54\n")
    fourth = reader.read(key, now=10.0)
    assert fourth is not None and fourth.quota_cores == 1.0, "re-read after the refresh"
    assert fourth.throttled_share == pytest.approx(10 / 50), "since the newest reading 4 s old (at 5 s)"


def test_the_reader_forgets_a_removed_cgroup_and_processes_it_no_longer_watches(tmp_path: Path) -> None:
    leaf = "sys/fs/cgroup/job"
    proc, root = _tree(
        tmp_path,
        "0::/job\n",
        V2_MOUNT,
        {f"{leaf}/cpu.max": "50000 100000\n", f"{leaf}/cpu.stat": V2_STAT},
    )
    reader = CgroupCpuReader(proc, root)
    key = (PID, 1)
    assert reader.read(key, now=0.0) is not None
    for name in ("cpu.max", "cpu.stat"):
        (tmp_path / leaf / name).unlink()
    (tmp_path / leaf).rmdir()
    reading = reader.read(key, now=1.0)
    assert reading is not None and reading.throttled_share is None, "counters gone: no share"
    assert reader.read(key, now=2.0) is None, "looked for again at once: the cgroup is gone"
    reader.retain(set())
    assert reader._known == {}


# Permission denied cannot be staged for root (it reads any file): a subprocess that drops to nobody.
AS_NOBODY = r"""
import json, os, sys
from pathlib import Path
from xfertop.sources.host.cgroup_cpu import read_cpu_limit
os.setgid(65534)
os.setuid(65534)
limit = read_cpu_limit(int(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
print(json.dumps(limit.quota_cores if limit else "none"))
"""


def test_an_unreadable_quota_file_is_skipped_and_an_unreadable_cgroup_file_is_unknown() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to read as another user")
    with tempfile.TemporaryDirectory() as name:
        top = Path(name)
        top.chmod(0o755)
        proc, root = _tree(
            top,
            "0::/a/b\n",
            V2_MOUNT,
            {"sys/fs/cgroup/a/b/cpu.max": "50000 100000\n", "sys/fs/cgroup/a/cpu.max": "300000 100000\n"},
        )
        for path in top.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        (top / "sys/fs/cgroup/a/b/cpu.max").chmod(0o000)

        def seen() -> object:
            run = subprocess.run(
                [sys.executable, "-c", AS_NOBODY, str(PID), str(proc), str(root)],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert run.returncode == 0, run.stderr
            return json.loads(run.stdout)

        assert seen() == 3.0, "the leaf's 0.5 cannot be read; the parent's 3 can"
        (proc / str(PID) / "cgroup").chmod(0o000)
        assert seen() == "none"
