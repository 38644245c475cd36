"""A tiny stopwatch a user would write: phases on the host clock, shares from step 5 on."""
import json
import time

WARMUP = 5


class Truth:
    def __init__(self, enabled):
        self.enabled = enabled
        self.tot = {"data": 0.0, "copy": 0.0, "compute": 0.0}
        self.steps = 0
        self.t0 = None

    def step_start(self):
        # called at the top of each step, before waiting for data
        if self.enabled and self.t0 is None and self.steps >= WARMUP:
            self.t0 = time.perf_counter()
        self.steps += 1

    def add(self, name, dt):
        if self.t0 is not None:
            self.tot[name] += dt

    def report(self, **extra):
        if not self.enabled:
            return
        wall = time.perf_counter() - self.t0
        sh = {k: v / wall for k, v in self.tot.items()}
        sh["other"] = max(0.0, 1 - sum(sh.values()))
        data, copy, comp, other = sh["data"], sh["copy"], sh["compute"], sh["other"]
        if data >= 0.10 and data >= copy:
            kind = "input-bound"
        elif copy >= 0.10:
            kind = "copy-bound"
        elif comp + other >= 0.90:
            kind = "compute-bound"
        else:
            kind = "healthy"
        out = {"truth": {k: round(v, 4) for k, v in sh.items()}, "kind": kind,
               "steps_counted": self.steps - WARMUP, "wall_s": round(wall, 2),
               "ms_per_step": {k: round(1000 * v / max(1, self.steps - WARMUP), 2) for k, v in self.tot.items()}}
        out.update(extra)
        print("TRUTH " + json.dumps(out), flush=True)


class timed:
    def __init__(self, truth, name):
        self.truth, self.name = truth, name

    def __enter__(self):
        self.t = time.perf_counter()

    def __exit__(self, *a):
        self.truth.add(self.name, time.perf_counter() - self.t)
