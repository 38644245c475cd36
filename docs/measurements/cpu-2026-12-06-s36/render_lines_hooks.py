import atexit, collections, json, os, sys, time, builtins
_ns = collections.Counter(); _calls = collections.Counter(); _t0 = time.monotonic(); _done = [False]; _fr = [0]; _chops=[0]; _upd=[0]
def _patch():
    import textual._compositor as c
    orig = c.Compositor._get_renders
    def gr(self, crop=None):
        for region, clip, strips in orig(self, crop):
            yield region, clip, strips
    def wrap_rl(cls):
        o = cls.render_lines
        def rl(self, crop):
            t = time.thread_time_ns(); r = o(self, crop)
            if time.monotonic() - _t0 > 12:
                k = type(self).__name__; _ns[k] += time.thread_time_ns() - t; _calls[k] += 1
            return r
        cls.render_lines = rl
    import textual.widget as w
    wrap_rl(w.Widget)
    o3 = c.Compositor._render_chops
    def rc(self, crop, is_rendered_line):
        t = time.thread_time_ns(); r = o3(self, crop, is_rendered_line)
        if time.monotonic() - _t0 > 12:
            _chops[0] += time.thread_time_ns() - t; _fr[0] += 1
            if _fr[0] % 5 == 0: _dump()
        return r
    c.Compositor._render_chops = rc
    o4 = c.Compositor.render_update
    def ru(self, *a, **k):
        t = time.thread_time_ns(); r = o4(self, *a, **k)
        if time.monotonic() - _t0 > 12: _upd[0] += time.thread_time_ns() - t
        return r
    c.Compositor.render_update = ru
_oi = builtins.__import__
def imp(*a, **k):
    r = _oi(*a, **k)
    if not _done[0] and hasattr(sys.modules.get("textual._compositor"), "Compositor") and hasattr(sys.modules.get("textual.widget"), "Widget"):
        _done[0] = True; _patch()
    return r
builtins.__import__ = imp
def _dump():
    f = _fr[0]
    json.dump({"frames": f, "chops_ms_per_frame": _chops[0]/1e6/f, "update_ms_per_frame": _upd[0]/1e6/f, "render_lines_us_per_frame": {k: round(v/1e3/f, 1) for k, v in _ns.most_common()}, "calls_per_frame": {k: round(v/f, 2) for k, v in _calls.items()}}, open(f"/tmp/rl/out-{os.getpid()}.json", "w"), indent=1)
