"""Real jobs snapshots for analyse_bench.py: the CPU demo job's ring after SECONDS, six reads 0.5 s apart.

    PYTHONPATH=src python analyse_states.py SECONDS OUT.pkl [--gaps]

Pickles (six JobsState, one HostState). The demo job steps ~6 times a second on the CPU VM: 185 s fill its
1024-step ring. ``--gaps``: every step also carries a GPU gap of 0.3 of its wall (what a CUDA job's ring
holds), so the analysis attributes the GPU's idle time as it does on a GPU box.
"""
import dataclasses, os, pickle, subprocess, sys, tempfile, time

seconds, out, gaps = float(sys.argv[1]), sys.argv[2], "--gaps" in sys.argv
ring_dir = tempfile.mkdtemp()
job = subprocess.Popen([sys.executable, "-m", "xfertop.launch.demo_job", "--phase-seconds", "600"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, XFERTOP_DIR=ring_dir))
from xfertop.sources.host.source import HostSource
from xfertop.sources.jobs.source import JobsSource

jobs, host = JobsSource(interval_s=0.5, ring_dir=ring_dir), HostSource(interval_s=1)
try:
    time.sleep(seconds)
    states = []
    for _ in range(6):
        states.append(jobs.sample())
        time.sleep(0.5)
    host.watch_pids({job.pid})
    host.sample()
    time.sleep(0.5)
    host_state = host.sample()
finally:
    job.kill()


def with_gaps(state):
    return dataclasses.replace(state, jobs=tuple(
        dataclasses.replace(j, ranks=tuple(
            dataclasses.replace(r, steps=tuple(dataclasses.replace(s, gpu_gap_ms=0.3 * s.wall_ms) for s in r.steps))
            for r in j.ranks))
        for j in state.jobs))


if gaps:
    states = [with_gaps(state) for state in states]
pickle.dump((states, host_state), open(out, "wb"))
print("steps in ring:", [len(r.steps) for j in states[-1].jobs for r in j.ranks])
