"""Ground-truth phase clock used only with --truth: every moment of a step is booked to exactly one phase."""
import sys, time
from collections import defaultdict

PHASES = ("wait", "pre", "copy", "model", "sync", "post")


class Truth:
    def __init__(self, skip=5, enabled=True):
        self.enabled = enabled
        self.skip = skip
        self.tot = defaultdict(float)
        self.sub = defaultdict(float)   # optional finer split (not part of the 100%)
        self.steps = 0
        self.last = None
        self.per_step = []              # list of dicts, for per-window shares

    def begin(self):
        if self.enabled:
            self.last = time.perf_counter()
            self._cur = defaultdict(float)

    def mark(self, phase, sub=None):
        """book the time since the previous mark to `phase`"""
        if not self.enabled:
            return
        now = time.perf_counter()
        dt = now - self.last
        self.last = now
        self._cur[phase] += dt
        if sub and self.steps >= self.skip:
            self.sub[sub] += dt

    def end_step(self):
        if not self.enabled:
            return
        if self.steps >= self.skip:
            for k, v in self._cur.items():
                self.tot[k] += v
            self.per_step.append(dict(self._cur))
        self.steps += 1
        self._cur = defaultdict(float)

    def report(self, windows=1):
        if not self.enabled:
            return
        total = sum(self.tot.values())
        n = self.steps - self.skip
        line = " ".join(f"{p}={100*self.tot.get(p,0)/total:.1f}%" for p in PHASES)
        print(f"TRUTH steps={n} mean_step_ms={1000*total/max(n,1):.2f} {line}", file=sys.stderr)
        if self.sub:
            print("TRUTH sub " + " ".join(f"{k}={100*v/total:.1f}%" for k, v in self.sub.items()), file=sys.stderr)
        if windows > 1 and self.per_step:
            k = len(self.per_step)
            for w in range(windows):
                chunk = self.per_step[w * k // windows:(w + 1) * k // windows]
                t = defaultdict(float)
                for d in chunk:
                    for p, v in d.items():
                        t[p] += v
                tt = sum(t.values())
                print(f"TRUTH window{w+1}/{windows} steps={len(chunk)} mean_step_ms={1000*tt/max(len(chunk),1):.2f} "
                      + " ".join(f"{p}={100*t.get(p,0)/tt:.1f}%" for p in PHASES), file=sys.stderr)
