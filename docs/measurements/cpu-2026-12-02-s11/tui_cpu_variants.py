import os, sys, time, subprocess, psutil
sys.path.insert(0, "/work/main/benchmarks")
from pty_run import PtyProcess
LAUNCHER = r'''
import os, sys
from types import SimpleNamespace
sys.path.insert(0, "/work/main/tests")
from fakes.fake_pynvml import FakeGpu, FakePynvml, RecordedTraffic
pids = [int(p) for p in os.environ.get("XFERTOP_FAKE_GPU_PIDS", "").split(",") if p]
gpu = FakeGpu(0, traffic=RecordedTraffic(), processes=[SimpleNamespace(pid=pid, usedGpuMemory=3 * 10**9) for pid in pids])
sys.modules["pynvml"] = FakePynvml([gpu])
mode = os.environ.get("DIAG_MODE", "")
if "nostrip" in mode:
    from xfertop.ui import step_strip
    step_strip.StepStrip.build_lines = lambda self, width: []
if "nofilter" in mode:
    from textual.filter import ANSIToTruecolor
    from xfertop.ui.app import XfertopApp
    orig = XfertopApp.get_line_filters
    XfertopApp.get_line_filters = lambda self: [f for f in orig(self) if not isinstance(f, ANSIToTruecolor)]
import gc, time, atexit
gcstats = {0: [0, 0.0], 1: [0, 0.0], 2: [0, 0.0]}
_t = [0.0]
def _cb(phase, info):
    if phase == "start": _t[0] = time.perf_counter()
    else:
        g = gcstats[info["generation"]]; g[0] += 1; g[1] += time.perf_counter() - _t[0]
if "gcstat" in mode: gc.callbacks.append(_cb)
def _dump():
    with open("/tmp/diag/gc.txt", "a") as f:
        f.write(mode + " " + repr({k: (v[0], round(v[1]*1000, 1)) for k, v in gcstats.items()}) + " objects " + str(len(gc.get_objects())) + "\n")
atexit.register(_dump)
if "freeze" in mode:
    import threading
    threading.Timer(3.0, gc.freeze).start()
if "countw" in mode:
    from textual.drivers import linux_driver
    _w = linux_driver.LinuxDriver.write
    wc = [0, 0]
    def _write(self, data):
        wc[0] += 1; wc[1] += len(data); return _w(self, data)
    linux_driver.LinuxDriver.write = _write
    atexit.register(lambda: open("/tmp/diag/gc.txt", "a").write(f"writes {wc}\n"))
if "thr" in mode:
    gc.set_threshold(10000, 10, 10)
from xfertop.cli import main
sys.exit(main(sys.argv[1:]))
'''
def thread_cpu(pid):
    return {t.id: t.user_time + t.system_time for t in psutil.Process(pid).threads()}
load = subprocess.Popen([sys.executable, "-m", "xfertop.launch.demo_job", "--phase-seconds", "600"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": os.environ.get("SRC", "/work/main/src")})
rate = sys.argv[1]; secs = float(sys.argv[2]); modes = sys.argv[3:]
results = {m: [] for m in modes}
try:
    for rnd in range(int(os.environ.get("ROUNDS", "1"))):
        for mode in modes:
            env = {**os.environ, "PYTHONPATH": os.environ.get("SRC", "/work/main/src"), "XFERTOP_FAKE_GPU_PIDS": str(load.pid), "DIAG_MODE": mode}
            tui = PtyProcess([sys.executable, "-c", LAUNCHER, "--interval", str(1/float(rate))], columns=160, rows=48, env=env)
            tui.read_for(4)
            b = thread_cpu(tui.pid); t = time.perf_counter(); n0 = len(tui.output)
            tui.read_for(secs)
            a = thread_cpu(tui.pid); wall = time.perf_counter() - t; nb = len(tui.output) - n0
            main = 100 * (a[tui.pid] - b[tui.pid]) / wall
            total = 100 * sum(a[k] - b.get(k, 0) for k in a) / wall
            results[mode].append(main)
            print(f"{mode or 'base':20} {rate} Hz main {main:5.2f}% total {total:5.2f}% {nb/1000:.0f} KB", flush=True)
            tui.send(b"q"); tui.wait(10); tui.close()
finally:
    load.kill()
