"""What the live view's main thread spends its CPU on, measured inside it: per function, per widget, and
Python's garbage collector (CPU VM, fake NVML from the recorded H200, the CPU demo job, a 160x48 pty).

    python view_costs.py TREE WARMUP SECONDS [--gc default|freeze|thr=N|freeze,thr=N|asis]
                         [--wrap module:Class:method,...] [--widgets]

TREE's src runs the view. After WARMUP s the counters start (and --gc sets the collector: `default` is
Python's 700/10/10 with nothing frozen, what the view ran with before gc_pace; `asis` leaves what the
view chose). Prints ms of the thread's CPU a second for each wrapped method (outermost call only), for
Textual's StylesCache.render_widget per widget with --widgets (W: CPU, L: lines asked, D: lines rendered
anew), the collector's count, total and longest pass per generation (gc.callbacks, thread CPU time), and
the whole process's CPU over the same seconds (os.times, every thread; at exit, so a little of the quit),
and each thread's (/proc/self/task/*/schedstat, by the thread's name).

Session 40 added the per-thread lines and two profiles: --profile-method module:Class:method [--top N]
(cProfile of that method's calls, sorted by cumulative time) and --profile-widget ClassName (cProfile of
that widget's StylesCache.render_widget), each printed to its --top N functions (30 unless given).
"""
import os, subprocess, sys, tempfile
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../.."))
sys.path.insert(0, REPO + "/benchmarks")
from pty_run import PtyProcess
from tui_cpu_fake_gpu import LAUNCHER

tree, warm, secs = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
gc_mode = sys.argv[sys.argv.index("--gc") + 1] if "--gc" in sys.argv else "asis"
wrap = sys.argv[sys.argv.index("--wrap") + 1] if "--wrap" in sys.argv else ""
out = tempfile.mktemp(suffix=".txt")
PATCH = '''
import atexit, gc, importlib, threading, time as _t
_st, _on, _gc = {}, [False], {}
def _wrap(modname, clsname, meth):
    cls = getattr(importlib.import_module(modname), clsname)
    orig, name, depth = getattr(cls, meth), clsname + "." + meth, [0]
    def w(*a, **k):
        if not _on[0] or depth[0]:
            return orig(*a, **k)
        depth[0] += 1
        t0 = _t.thread_time_ns()
        try:
            return orig(*a, **k)
        finally:
            depth[0] -= 1
            n, tot = _st.get(name, (0, 0)); _st[name] = (n + 1, tot + _t.thread_time_ns() - t0)
    setattr(cls, meth, w)
for spec in filter(None, WRAP.split(",")):
    _wrap(*spec.split(":"))
import cProfile as _cProfile
_mprof = _cProfile.Profile() if PROFILE_METHOD else None
_prof = None
if _mprof is not None:
    _pm, _pc, _pn = PROFILE_METHOD.split(":")
    _pcls = getattr(importlib.import_module(_pm), _pc)
    _porig = getattr(_pcls, _pn)
    def _pw(*a, **k):
        if not _on[0]:
            return _porig(*a, **k)
        _mprof.enable()
        try:
            return _porig(*a, **k)
        finally:
            _mprof.disable()
    setattr(_pcls, _pn, _pw)
if WIDGETS:
    from textual import _styles_cache as _sc
    _orw, _orl, _cur = _sc.StylesCache.render_widget, _sc.StylesCache.render_line, [""]
    _prof = _cProfile.Profile() if PROFILE_WIDGET else None
    def _rw(self, widget, crop):
        if not _on[0]:
            return _orw(self, widget, crop)
        if _prof is not None and type(widget).__name__ == PROFILE_WIDGET:
            _prof.enable()
            try:
                return _orw(self, widget, crop)
            finally:
                _prof.disable()
        key = type(widget).__name__ + "#" + str(widget.id)
        _cur[0] = key
        t0 = _t.thread_time_ns()
        r = _orw(self, widget, crop)
        n, tot = _st.get("W " + key, (0, 0)); _st["W " + key] = (n + 1, tot + _t.thread_time_ns() - t0)
        _st["L " + key] = (_st.get("L " + key, (0, 0))[0] + crop.height, 0)
        return r
    def _rl(self, *a, **k):
        if _on[0]:
            _st["D " + _cur[0]] = (_st.get("D " + _cur[0], (0, 0))[0] + 1, 0)
        return _orl(self, *a, **k)
    _sc.StylesCache.render_widget, _sc.StylesCache.render_line = _rw, _rl
_began = [0]
import os as _os
_cpu0 = [0.0]
_thr0 = {}
def _threads():
    out = {}
    for task in _os.listdir("/proc/self/task"):
        try:
            name = open(f"/proc/self/task/{task}/comm").read().strip()
            ns = int(open(f"/proc/self/task/{task}/schedstat").read().split()[0])
        except OSError:
            continue
        out[f"{name}({task})"] = ns
    return out
def _cb(phase, info):
    if not _on[0]:
        return
    if phase == "start":
        _began[0] = _t.thread_time_ns()
    else:
        g, d = info["generation"], _t.thread_time_ns() - _began[0]
        n, tot, mx = _gc.get(g, (0, 0, 0)); _gc[g] = (n + 1, tot + d, max(mx, d))
gc.callbacks.append(_cb)
def _start():
    for part in GC_MODE.split(","):
        if part == "default":
            gc.unfreeze(); gc.set_threshold(700, 10, 10)
        elif part == "freeze":
            gc.freeze()
        elif part.startswith("thr="):
            gc.set_threshold(int(part[4:]), 10, 10)
    _cpu0[0] = sum(_os.times()[:2])
    _thr0.update(_threads())
    _on[0] = True
threading.Timer(WARM, _start).start()
def _dump():
    lines = [f"{k}: {n} calls, {tot / 1e6 / SECS:.3f} ms/s" if tot else f"{k}: {n}"
             for k, (n, tot) in sorted(_st.items(), key=lambda kv: (kv[0][:2], -kv[1][1], kv[0]))]
    total = sum(tot for _, tot, _ in _gc.values())
    lines.append(f"gc: {total / 1e6 / SECS:.3f} ms/s; per generation (passes, total ms, longest ms): "
                 + repr({g: (n, round(tot / 1e6, 1), round(mx / 1e6, 1)) for g, (n, tot, mx) in sorted(_gc.items())}))
    for key, ns in sorted(_threads().items()):
        if key in _thr0:
            lines.append(f"thread {key}: {(ns - _thr0[key]) / 1e6 / SECS:.3f} ms/s")
    lines.append(f"process: {(sum(_os.times()[:2]) - _cpu0[0]) * 1e3 / SECS:.2f} ms/s of CPU, every thread")
    import io, pstats
    for profile in (_mprof, _prof):
        if profile is not None:
            buf = io.StringIO()
            pstats.Stats(profile, stream=buf).sort_stats("cumulative").print_stats(PROFILE_TOP)
            lines.append(buf.getvalue())
    open(OUT, "w").write(chr(10).join(lines) + chr(10))
atexit.register(_dump)
'''
profile_method = sys.argv[sys.argv.index("--profile-method") + 1] if "--profile-method" in sys.argv else ""
profile_top = int(sys.argv[sys.argv.index("--top") + 1]) if "--top" in sys.argv else 30
profile_widget = sys.argv[sys.argv.index("--profile-widget") + 1] if "--profile-widget" in sys.argv else ""
settings = (f"PROFILE_METHOD, PROFILE_TOP = {profile_method!r}, {profile_top}\n"
            f"WRAP, WIDGETS, WARM, SECS, GC_MODE, OUT, PROFILE_WIDGET = {wrap!r}, "
            f"{'--widgets' in sys.argv or bool(profile_widget)}, {warm}, {secs}, {gc_mode!r}, {out!r}, {profile_widget!r}\n")
launcher = LAUNCHER.replace("from xfertop.cli import main", settings + PATCH + "\nfrom xfertop.cli import main")
env = dict(os.environ, XFERTOP_FAKE_TESTS_DIR=REPO + "/tests", PYTHONPATH=os.path.abspath(tree) + "/src",
           XFERTOP_DIR=tempfile.mkdtemp(prefix="xfertop-costs-"))
job = subprocess.Popen([sys.executable, "-m", "xfertop.launch.demo_job", "--phase-seconds", "600"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
env["XFERTOP_FAKE_GPU_PIDS"] = str(job.pid)
t = PtyProcess([sys.executable, "-c", launcher, "--interval", "1"], columns=160, rows=48, env=env)
try:
    t.read_for(warm + secs)
    t.send(b"q")
    t.wait(10)
finally:
    t.close()
    job.kill()
print(open(out).read() if os.path.exists(out) else "no figures: " + bytes(t.output[-800:]).decode(errors="replace"))
