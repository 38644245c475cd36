import json, sys, time
class Truth:
    """Phase times of the loop on the host clock (CPU: synchronous, so exact)."""
    def __init__(self, warm=5):
        self.parts = dict(wait=0.0, loop_pre=0.0, copy=0.0, model=0.0, sync=0.0, loop_post=0.0)
        self.step = 0; self.warm = warm; self.t = None; self.start = None
    def mark(self, part):
        now = time.perf_counter()
        if self.t is not None and self.step >= self.warm:
            self.parts[part] = self.parts.get(part, 0.0) + now - self.t
        self.t = now
    def next_step(self):
        self.step += 1
    def report(self, **extra):
        total = sum(self.parts.values())
        shares = {k: round(v / total, 3) for k, v in self.parts.items()} if total else {}
        print("TRUTH " + json.dumps({"parts": shares, "steps": self.step, **extra}), flush=True)
