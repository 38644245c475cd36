"""Two trees' live views at once, on the same demo job, over the same seconds (fake NVML, CPU VM).

    python together_cpu.py BEFORE_TREE AFTER_TREE WARMUP SECONDS ROUNDS [--interval S]

Each round starts both views together (each in its own 160x48 pty, the recorded-H200 fake NVML of
tests/fakes, the CPU demo job as load), lets them warm up, and reads each process's scheduled CPU
(/proc/PID/task/*/schedstat) over the same SECONDS: a machine's drift weighs on both alike. Prints each
round's ms of CPU a second and the after/before ratio, then the geometric mean of the ratios.
"""
import concurrent.futures, math, os, subprocess, sys, tempfile, time
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../.."))
sys.path.insert(0, REPO + "/benchmarks")
from pty_run import PtyProcess
from tui_cpu import scheduled_seconds
from tui_cpu_fake_gpu import LAUNCHER

before, after, warm, secs, rounds = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
interval = sys.argv[sys.argv.index("--interval") + 1] if "--interval" in sys.argv else "1"
ring_dir = tempfile.mkdtemp(prefix="xfertop-together-")
base = dict(os.environ, XFERTOP_DIR=ring_dir, XFERTOP_FAKE_TESTS_DIR=REPO + "/tests")
job = subprocess.Popen([sys.executable, "-m", "xfertop.launch.demo_job", "--phase-seconds", "3600"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(base, PYTHONPATH=after + "/src"))
base["XFERTOP_FAKE_GPU_PIDS"] = str(job.pid)
time.sleep(3)

def one(tree):
    t = PtyProcess([sys.executable, "-c", LAUNCHER, "--interval", interval], columns=160, rows=48,
                   env=dict(base, PYTHONPATH=tree + "/src"))
    try:
        t.read_for(warm)
        a, w0 = scheduled_seconds(t.pid), time.perf_counter()
        t.read_for(secs)
        b, w1 = scheduled_seconds(t.pid), time.perf_counter()
        t.send(b"q"); t.wait(10)
        return 1000 * (b - a) / (w1 - w0)
    finally:
        t.close()

ratios = []
try:
    for r in range(rounds):
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            fb, fa = pool.submit(one, before), pool.submit(one, after)
            mb, ma = fb.result(), fa.result()
        ratios.append(ma / mb)
        print(f"round {r + 1}: before {mb:.2f} ms/s, after {ma:.2f} ms/s, after/before {ma / mb:.3f}", flush=True)
finally:
    job.kill()
print(f"geometric mean after/before: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f} over {len(ratios)} rounds")
