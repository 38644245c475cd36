import os, sys, time, atexit, collections
REPO = os.environ.get("REPO", "/work/wt-view")
sys.path.insert(0, REPO + "/benchmarks")
from pty_run import PtyProcess
LAUNCHER = r'''
import os, sys, atexit, collections, time
from types import SimpleNamespace
sys.path.insert(0, os.environ["XFERTOP_FAKE_TESTS_DIR"])
from fakes.fake_pynvml import FakeGpu, FakePynvml, RecordedTraffic
pids = [int(p) for p in os.environ.get("XFERTOP_FAKE_GPU_PIDS", "").split(",") if p]
gpu = FakeGpu(0, traffic=RecordedTraffic(), processes=[SimpleNamespace(pid=pid, usedGpuMemory=3 * 10**9) for pid in pids])
sys.modules["pynvml"] = FakePynvml([gpu])
from xfertop.ui import text_lines
counts = collections.Counter(); calls = collections.Counter(); heights = {}
orig = text_lines.TextLines._set_lines
def _set_lines(self, lines, width):
    changed = orig(self, lines, width)
    if time.time() - t0 < COUNT_FROM_S:
        return changed
    name = type(self).__name__ + "#" + str(self.id)
    counts[name] += len(changed); calls[name] += 1; heights[name] = len(lines)
    return changed
text_lines.TextLines._set_lines = _set_lines
# Screen updates: each is one compositor pass and one write to the terminal.
from textual.app import App
_display = App._display
def _counted_display(self, screen, renderable):
    if time.time() - t0 < COUNT_FROM_S:
        return _display(self, screen, renderable)
    calls["(screen updates)"] += 1
    return _display(self, screen, renderable)
App._display = _counted_display
events = []
def _trace(cls, name):
    orig_m = getattr(cls, name)
    def wrapped(self, *a, **k):
        events.append((time.time(), cls.__name__ + "." + name))
        return orig_m(self, *a, **k)
    setattr(cls, name, wrapped)
from xfertop.ui import repaint, step_strip, app as app_mod, key_footer
_trace(repaint.Repainter, "_on_tick"); _trace(repaint.Repainter, "repaint_dirty")
_trace(step_strip.StepStrip, "_draw"); _trace(app_mod.XfertopApp, "on_jobs_state_updated")
_trace(app_mod.XfertopApp, "on_host_state_updated"); _trace(app_mod.XfertopApp, "on_gpu_state_updated")
_trace(App, "_display"); _trace(App, "refresh_bindings")
from textual.widget import Widget
_render_lines = Widget.render_lines
def _counted_render_lines(self, crop):
    if time.time() - t0 < COUNT_FROM_S:
        return _render_lines(self, crop)
    calls["render_lines " + type(self).__name__ + "#" + str(self.id)] += 1
    counts["render_lines " + type(self).__name__ + "#" + str(self.id)] += crop.height
    return _render_lines(self, crop)
Widget.render_lines = _counted_render_lines
spent = collections.Counter()
# WARM=S (session 37): count rows and time only from S seconds on (steady state); unset, the counts
# cover the whole run and the times start at 5 s, as in session 13.
COUNT_FROM_S = float(os.environ.get("WARM", "0"))
WARMUP_S = COUNT_FROM_S or 5.0
def _timed(cls, name):
    orig_m = getattr(cls, name)
    def wrapped(self, *a, **k):
        t = time.perf_counter()
        try:
            return orig_m(self, *a, **k)
        finally:
            if time.time() - t0 > WARMUP_S:  # start-up's layouts and first frames left out
                spent[cls.__name__ + "." + name] += time.perf_counter() - t
    setattr(cls, name, wrapped)
from textual.screen import Screen
from textual.drivers.linux_driver import LinuxDriver
_timed(Screen, "_compositor_refresh"); _timed(repaint.Repainter, "repaint_dirty")
_timed(Screen, "_refresh_layout"); _trace(Screen, "_refresh_layout")
import cProfile
prof = cProfile.Profile() if os.environ.get("CPROFILE") else None
if prof is not None:
    prof.enable()
t0 = time.time()
def dump():
    if prof is not None:
        prof.disable(); prof.dump_stats("/tmp/diag/cprofile.out")
    with open("/tmp/diag/counts.txt", "w") as f:
        elapsed = time.time() - t0
        dt = elapsed - COUNT_FROM_S
        for k, v in counts.most_common():
            f.write(f"{k:40} rows changed/s {v/dt:6.1f}  calls/s {calls[k]/dt:5.2f} height {heights.get(k, '-')}\n")
        f.write(f"screen updates/s {calls['(screen updates)']/dt:5.2f}\n")
        for k, v in spent.most_common():
            f.write(f"time {k:40} {1000 * v / (elapsed - WARMUP_S):7.2f} ms a second after {WARMUP_S:g} s\n")
        if os.environ.get("TRACE"):
            for t, what in events[-60:]:
                f.write(f"{t - t0:8.3f} {what}\n")
atexit.register(dump)
from xfertop.cli import main
sys.exit(main(sys.argv[1:]))
'''
import subprocess
os.makedirs("/tmp/diag", exist_ok=True)
load = subprocess.Popen([sys.executable, "-m", "xfertop.launch.demo_job", "--phase-seconds", "600"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": os.environ.get("SRC", REPO + "/src"), "XFERTOP_FAKE_TESTS_DIR": REPO + "/tests"})
env = {**os.environ, "PYTHONPATH": os.environ.get("SRC", REPO + "/src"), "XFERTOP_FAKE_TESTS_DIR": REPO + "/tests", "XFERTOP_FAKE_GPU_PIDS": str(load.pid)}
cols, rows = (int(x) for x in sys.argv[1].split("x"))
tui = PtyProcess([sys.executable, "-c", LAUNCHER, "--interval", sys.argv[2]], columns=cols, rows=rows, env=env)
tui.read_for(float(sys.argv[3]))
n = len(tui.output)
tui.send(b"q"); tui.wait(10)
tui.close(); load.kill()
print("bytes", n)
print(open("/tmp/diag/counts.txt").read())
