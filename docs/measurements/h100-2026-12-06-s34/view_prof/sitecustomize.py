"""Measurement only (docs/measurements/h100-2026-12-06-s34): put on PYTHONPATH of the view, it wraps the
functions PROF_TARGETS names (module:Qual.name) to sum their main-thread CPU, optionally cProfiles
PROF_CPROFILE ones, and writes PROF_OUT at exit."""
import atexit, json, os, sys, time, threading, importlib
_acc = {}
_main = threading.main_thread()
_t0 = [None]
import cProfile
_profs = {q: cProfile.Profile() for q in os.environ.get('PROF_CPROFILE', '').split(',') if q}
_start = time.monotonic()
_skip = float(os.environ.get('PROF_SKIP_S', '8'))
def _wrap(modname, qual):
    def patch():
        mod = importlib.import_module(modname)
        owner, _, name = qual.rpartition(".")
        obj = getattr(mod, owner) if owner else mod
        orig = getattr(obj, name)
        depth = [0]
        def w(*a, **k):
            if threading.current_thread() is not _main or time.monotonic() - _start < _skip:
                return orig(*a, **k)
            if _t0[0] is None: _t0[0] = (time.thread_time_ns(), time.monotonic(), time.process_time())
            depth[0] += 1
            t = time.thread_time_ns()
            prof = _profs.get(modname + ":" + qual)
            if prof is not None and depth[0] == 1: prof.enable()
            try:
                return orig(*a, **k)
            finally:
                if prof is not None and depth[0] == 1: prof.disable()
                depth[0] -= 1
                if depth[0] == 0:
                    e = _acc.setdefault(qual, [0, 0]); e[0] += time.thread_time_ns() - t; e[1] += 1
        setattr(obj, name, w)
    return patch
_targets = [l.split(":") for l in os.environ.get("PROF_TARGETS", "").split(",") if l]
class _Finder:
    def find_spec(self, fullname, path, target=None):
        return None
_patched = set()
def _try_patch():
    for m, q in _targets:
        if (m, q) in _patched or m not in sys.modules: continue
        try:
            _wrap(m, q)(); _patched.add((m, q))
        except Exception as e:
            pass
import builtins
_orig_import = builtins.__import__
def _imp(*a, **k):
    r = _orig_import(*a, **k)
    if len(_patched) < len(_targets): _try_patch()
    return r
builtins.__import__ = _imp
def _dump():
    out = {k: {"ms": v[0] / 1e6, "calls": v[1]} for k, v in _acc.items()}
    if _t0[0]:
        out["window_s"] = time.monotonic() - _t0[0][1]
        out["main_thread_ms"] = (time.thread_time_ns() - _t0[0][0]) / 1e6
        out["process_ms"] = (time.process_time() - _t0[0][2]) * 1000
    ticks = os.sysconf("SC_CLK_TCK")
    threads = {}
    for t in threading.enumerate():
        try:
            f = open(f"/proc/self/task/{t.native_id}/stat").read().rsplit(")", 1)[1].split()
            threads[t.name] = (int(f[11]) + int(f[12])) * 1000 / ticks
        except Exception:
            pass
    out["threads_ms_whole_life"] = threads
    with open(os.environ.get("PROF_OUT", "/tmp/prof.json"), "w") as f: json.dump(out, f, indent=1)
def _dump_prof():
    for q, p in _profs.items():
        p.dump_stats(os.environ.get('PROF_OUT', '/tmp/prof.json') + '.' + q + '.pstats')
atexit.register(_dump)
atexit.register(_dump_prof)
if os.environ.get("PROF_FAKE_NVML"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../../tests"))
    from fakes.fake_pynvml import FakePynvml
    sys.modules["pynvml"] = FakePynvml()
def _thread_cpu():
    ticks = os.sysconf("SC_CLK_TCK"); r = {}
    names = {t.native_id: t.name for t in threading.enumerate()}
    for tid in os.listdir("/proc/self/task"):
        try:
            raw = open(f"/proc/self/task/{tid}/stat").read()
            comm = raw[raw.index("(")+1:raw.rindex(")")]
            f = raw.rsplit(")", 1)[1].split()
            r[f"{names.get(int(tid), comm)}:{tid}"] = (int(f[11]) + int(f[12])) * 1000 / ticks
        except Exception: pass
    return r
def _sampler():
    time.sleep(_skip); a = _thread_cpu(); time.sleep(20); b = _thread_cpu()
    with open(os.environ.get("PROF_OUT", "/tmp/prof.json") + ".threads", "w") as f:
        json.dump({k: b[k] - a.get(k, 0) for k in b}, f, indent=1)
threading.Thread(target=_sampler, daemon=True, name="prof-sampler").start()
