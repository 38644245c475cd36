"""CPU time of the cgroup CPU quota reads the host source makes per watched process.

    python benchmarks/cgroup_cpu_cost.py PID [--calls 2000]

Measures, with time.thread_time() (user + system CPU of this thread, so the kernel's work counts):
a cached CgroupCpuReader.read (what every host sample pays: one cpu.stat where the process has a
quota, nothing where it has none) and a full read_cpu_limit (/proc/<pid>/cgroup, mountinfo and the quota
files up the path: what it pays every QUOTA_REFRESH_S). Put PID in a cgroup with a quota to see the
first cost with a quota, e.g. on cgroup v1 as root:

    mkdir /sys/fs/cgroup/cpu/q && echo 150000 > /sys/fs/cgroup/cpu/q/cpu.cfs_quota_us
    sh -c 'echo $$ > /sys/fs/cgroup/cpu/q/cgroup.procs; exec sleep 600' &
"""

from __future__ import annotations

import argparse
import time

from xfertop.sources.host.cgroup_cpu import QUOTA_REFRESH_S, CgroupCpuReader, read_cpu_limit


def per_call_us(call: object, calls: int) -> float:
    start = time.thread_time()
    for _ in range(calls):
        call()  # type: ignore[operator]
    return (time.thread_time() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pid", type=int)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    reader = CgroupCpuReader()
    key = (args.pid, 0)
    print("reading:", reader.read(key, time.monotonic()))
    cached = per_call_us(lambda: reader.read(key, time.monotonic()), args.calls)
    full = per_call_us(lambda: read_cpu_limit(args.pid), args.calls)
    print(
        f"cached read (every sample): {cached:.1f} us; full read (every {QUOTA_REFRESH_S:g} s): {full:.1f} us"
    )


if __name__ == "__main__":
    main()
