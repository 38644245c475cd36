"""Where each of the live view's threads spends its CPU in steady state: py-spy samples, summed by function.

    python thread_profile.py COLSxROWS WARMUP SECONDS [--real] [--cuda] [--top N] -- <xfertop args>

The view runs in a pty beside the demo job (fake NVML from the recorded H200 unless --real). After WARMUP s,
`py-spy record --nonblocking --threads` samples at 1 kHz for SECONDS; only running threads are sampled, so a
function's share of the samples is its share of the thread's CPU. Prints, per thread, the samples and the
top functions by inclusive and by own samples.
"""
import collections, os, subprocess, sys, tempfile
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../.."))
sys.path.insert(0, REPO + "/benchmarks")
from pty_run import PtyProcess
from tui_cpu_fake_gpu import LAUNCHER

size, warm, secs = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
rest = sys.argv[4:]
flags, args = rest[: rest.index("--")], rest[rest.index("--") + 1 :]
real, cuda = "--real" in flags, "--cuda" in flags
top = int(flags[flags.index("--top") + 1]) if "--top" in flags else 25
env = dict(os.environ, XFERTOP_FAKE_TESTS_DIR=REPO + "/tests")
job = subprocess.Popen([sys.executable, "-m", "xfertop.launch.demo_job", "--phase-seconds", "600",
                        *(["--device", "cuda"] if cuda else [])],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
env["XFERTOP_FAKE_GPU_PIDS"] = str(job.pid)
cols, rows = map(int, size.split("x"))
launch = ["-m", "xfertop"] if real else ["-c", LAUNCHER]
t = PtyProcess([sys.executable, *launch, *args], columns=cols, rows=rows, env=env)
t.read_for(warm)
raw = tempfile.mktemp(suffix=".txt")
rec = subprocess.Popen(["py-spy", "record", "--pid", str(t.pid), "--duration", str(int(secs)), "--rate", "1000",
                        "--nonblocking", "--threads", "--format", "raw", "-o", raw],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
t.read_for(secs + 3)
rec.wait(30)
t.send(b"q"); t.wait(10); t.close(); job.kill()
inclusive, own, per_thread = collections.defaultdict(collections.Counter), collections.defaultdict(collections.Counter), collections.Counter()
for line in open(raw):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")
    thread, frames, n = frames[0], frames[1:], int(count)
    per_thread[thread] += n
    for frame in set(frames):
        inclusive[thread][frame] += n
    if frames:
        own[thread][frames[-1]] += n
for thread, n in per_thread.most_common():
    print(f"\n== {thread}: {n} samples ({n / secs:.1f} ms of CPU a second at 1 kHz)")
    print("  inclusive:")
    for frame, k in inclusive[thread].most_common(top):
        print(f"    {100 * k / n:5.1f}%  {frame}")
    print("  own:")
    for frame, k in own[thread].most_common(top // 2):
        print(f"    {100 * k / n:5.1f}%  {frame}")
if os.environ.get("OURS"):  # OURS=1: the main thread's own code (xfertop/) by inclusive samples
    main = max(per_thread, key=per_thread.get)
    n = per_thread[main]
    print(f"\n== {main}: xfertop's functions, inclusive")
    for frame, k in inclusive[main].most_common():
        if "xfertop/" in frame and k * 100 / n >= 0.5:
            print(f"    {100 * k / n:5.1f}%  {frame}")
