"""A/B of the live view's main-thread CPU by thread_time (ns resolution, not the kernel's 10 ms ticks):
one load job aged AGE s, then TREE_A and TREE_B alternate (ABBA...) for ROUNDS rounds of SECONDS each at
RATE Hz, each run's main thread measured inside the process from 10 s after its start.
    python docs/measurements/cpu-2026-12-05-s26/view_ab_thread_time.py /tmp/ui_base . --rate 1
(TREE_A: a `git worktree add /tmp/ui_base REV`; the recorded-H200 fake, the CPU demo job, 160x48.)"""
import argparse, json, os, subprocess, sys, tempfile, time, statistics
from pathlib import Path
REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "benchmarks"))
import tui_cpu_fake_gpu
from pty_run import PtyProcess
ap = argparse.ArgumentParser(); ap.add_argument("a"); ap.add_argument("b")
ap.add_argument("--rounds", type=int, default=4); ap.add_argument("--seconds", type=float, default=30)
ap.add_argument("--rate", type=float, default=1.0); ap.add_argument("--age", type=float, default=100)
args = ap.parse_args()
PATCH = """
import time, json, atexit
T0 = time.monotonic(); base = []
import textual.app as _ta
_orig = _ta.App._display
def _display(self, *a, **k):
    if not base and time.monotonic() - T0 > 10: base.append((time.thread_time(), time.monotonic()))
    return _orig(self, *a, **k)
_ta.App._display = _display
atexit.register(lambda: json.dump({"cpu": time.thread_time() - base[0][0], "wall": time.monotonic() - base[0][1]}, open(OUT, "w")))
from xfertop.cli import main
"""
rings = tempfile.mkdtemp()
env = {**os.environ, "XFERTOP_FAKE_TESTS_DIR": str(REPO / "tests"), "XFERTOP_DIR": rings}
load = subprocess.Popen([sys.executable, "-m", "xfertop.launch.demo_job", "--phase-seconds", "6000"], env={**env, "PYTHONPATH": str(REPO / "src")}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
env["XFERTOP_FAKE_GPU_PIDS"] = str(load.pid)
time.sleep(args.age)
results = {"a": [], "b": []}
try:
    for r in range(args.rounds):
        for name in (("a", "b") if r % 2 == 0 else ("b", "a")):
            tree = getattr(args, name)
            out = Path(tempfile.mkdtemp()) / "cpu.json"
            launcher = tui_cpu_fake_gpu.LAUNCHER.replace("from xfertop.cli import main\n", PATCH.replace("OUT", repr(str(out))))
            view = PtyProcess([sys.executable, "-c", launcher, "--interval", str(1 / args.rate)], columns=160, rows=48, env={**env, "PYTHONPATH": f"{tree}/src"})
            view.read_for(10 + args.seconds); view.send(b"q"); view.read_for(3); view.close()
            d = json.loads(out.read_text()); pct = 100 * d["cpu"] / d["wall"]
            results[name].append(pct)
            print(f"round {r} {name} ({tree}): main thread {pct:.3f}% of a core over {d['wall']:.0f} s", flush=True)
finally:
    load.kill()
ma, mb = statistics.median(results["a"]), statistics.median(results["b"])
print(f"median a {ma:.3f}%  b {mb:.3f}%  b/a {mb / ma:.3f}")
print("per round b/a:", ", ".join(f"{b / a:.3f}" for a, b in zip(results["a"], results["b"])))
