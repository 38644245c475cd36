"""The live view's CPU per thread (scheduler ns), with the recorded-H200 fake NVML and an optional load.

    python thread_cpu.py COLSxROWS WARMUP SECONDS [--load] [--real] [--cuda] -- <xfertop args>

PYTHONPATH picks the tree under test (its src). Prints each thread's ms of CPU per second of wall time,
threads named from one `py-spy dump` before the window. ``--real``: the machine's own NVML (a GPU box),
not the fake; ``--cuda``: the load is the CUDA demo job.
"""
import glob, os, subprocess, sys, time
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../.."))
sys.path.insert(0, REPO + "/benchmarks")
from pty_run import PtyProcess
from tui_cpu_fake_gpu import LAUNCHER

def threads(pid):
    out = {}
    for d in glob.glob(f"/proc/{pid}/task/*"):
        try:
            name = open(d + "/comm").read().strip()
            ns = int(open(d + "/schedstat").read().split()[0])
        except OSError:
            continue
        key = d.rsplit("/", 1)[1]
        out[key] = out.get(key, 0) + ns
    return out

size, warm, secs = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
rest = sys.argv[4:]
flags = rest[: rest.index("--")]
load, real, cuda = "--load" in flags, "--real" in flags, "--cuda" in flags
args = rest[rest.index("--") + 1 :]
env = dict(os.environ, XFERTOP_FAKE_TESTS_DIR=REPO + "/tests")
job = None
if load:
    job = subprocess.Popen([sys.executable, "-m", "xfertop.launch.demo_job", "--phase-seconds", "600",
                            *(["--device", "cuda"] if cuda else [])],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    env["XFERTOP_FAKE_GPU_PIDS"] = str(job.pid)
cols, rows = map(int, size.split("x"))
launch = ["-m", "xfertop"] if real else ["-c", LAUNCHER]
t = PtyProcess([sys.executable, *launch, *args], columns=cols, rows=rows, env=env)
t.read_for(warm)
names = {}
try:
    dump = subprocess.run(["py-spy", "dump", "--pid", str(t.pid)], capture_output=True, text=True, timeout=20).stdout
    import re as _re
    for m in _re.finditer(r"Thread (0x[0-9A-F]+|\d+) \((\w+)\): \"([^\"]*)\"", dump):
        pass
    for line in dump.splitlines():
        m = _re.match(r'Thread (\d+) \((\w+)\): "([^"]*)"', line)
        if m:
            names[m.group(1)] = m.group(3)
except Exception as e:
    print("py-spy dump failed", e)
a, w0 = threads(t.pid), time.monotonic()
t.read_for(secs)
b, w1 = threads(t.pid), time.monotonic()
total = 0.0
for k in sorted(b):
    ms = (b[k] - a.get(k, 0)) / 1e6 / (w1 - w0)
    total += ms
    print(f"  {names.get(k, k):22s} {ms:6.2f} ms/s")
print(f"  {'total':22s} {total:6.2f} ms/s  ({' '.join(args)}; load={load})")
t.send(b"q"); t.wait(10); t.close()
if job: job.kill()
