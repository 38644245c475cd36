import json, os, time
import torch
class Truth:
    """Phase times of the loop on the host clock, the GPU synchronised at each mark (slow, exact). With
    TRUTH_SYNC=0 (trial.py's runs under xfertop) no sync: the job runs as users run it, its figures inexact."""
    def __init__(self, warm=5):
        self.parts = dict(wait=0.0, loop_pre=0.0, copy=0.0, model=0.0, sync=0.0, loop_post=0.0)
        self.step = 0; self.warm = warm; self.t = None
        self.cuda = torch.cuda.is_available() and os.environ.get("TRUTH_SYNC", "1") != "0"
    def mark(self, part, seconds=None):
        if self.cuda:
            torch.cuda.synchronize()
        now = time.perf_counter()
        if self.t is not None and self.step >= self.warm:
            self.parts[part] += (now - self.t) if seconds is None else seconds
        self.t = now
    def add(self, part, seconds):
        if self.step >= self.warm:
            self.parts[part] += seconds
    def next_step(self):
        self.step += 1
    def report(self, **extra):
        total = sum(self.parts.values())
        shares = {k: round(v / total, 3) for k, v in self.parts.items()} if total else {}
        print("TRUTH " + json.dumps({"parts": shares, "steps": self.step, **extra}), flush=True)
