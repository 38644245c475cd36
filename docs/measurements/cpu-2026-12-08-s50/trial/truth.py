"""Independent phase clock: each step records (t0 before next(), t1 batch in hand,
t2 model about to start, t3 optimizer.step() returned, t4 post-step work done)."""
import time, sys
pc = time.perf_counter

class Truth:
    def __init__(self):
        self.rows = []
        self.t_start = pc()
    def add(self, t0, t1, t2, t3, t4):
        self.rows.append((t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0))
    def _shares(self, rows):
        tot = sum(r[4] for r in rows) or 1e-9
        return [100 * sum(r[i] for r in rows) / tot for i in range(4)], 1000 * tot / max(1, len(rows))
    def report(self):
        n = len(self.rows)
        whole, ms = self._shares(self.rows)
        last, ms50 = self._shares(self.rows[-50:])
        names = ("wait", "loop_pre", "model", "loop_post")
        f = lambda s: ", ".join(f"{a} {b:.1f}%" for a, b in zip(names, s))
        # stdout timing lines are tagged TRUTH so they can be told apart from the job's own output
        print(f"TRUTH steps={n} mean_step={ms:.1f}ms wall={pc()-self.t_start:.1f}s whole: {f(whole)}")
        print(f"TRUTH last50 mean_step={ms50:.1f}ms: {f(last)}")
        sys.stdout.flush()

import os as _os, json as _json, atexit as _atexit
_orig_report = Truth.report
def _report(self):
    _orig_report(self)
    p = _os.environ.get("TRUTH_DUMP")
    if p:
        with open(p, "w") as f: _json.dump(self.rows, f)
Truth.report = _report
