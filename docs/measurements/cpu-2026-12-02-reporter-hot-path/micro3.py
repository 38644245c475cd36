"""Per-step added host ns: many short interleaved rounds, low percentile of thread CPU time."""
import sys, time, os, tempfile, json
os.environ.setdefault("XFERTOP_DIR", tempfile.mkdtemp(prefix="xf-micro-"))
sys.path.insert(0, "/work/wt-rep/benchmarks"); sys.path.insert(0, "/work/wt-rep/tests")
import torch, xfertop, xfertop.reporter
import reporter_overhead as ro
steps = int(sys.argv[1]); rounds = int(sys.argv[2]); q = 0.2
clk = time.perf_counter_ns
def measure(variants):
    for loop in variants.values(): loop(2000)
    per = {k: [] for k in variants}
    for _ in range(rounds):
        for name, loop in variants.items():
            t = clk(); loop(steps); per[name].append((clk() - t) / steps)
    low = {k: sorted(v)[int(len(v) * q)] for k, v in per.items()}
    return {k: round((v - low["plain"]) / 1000, 2) if k != "plain" else round(v / 1000, 2) for k, v in low.items()}
out = {"cpu": measure(ro.loops(torch.device("cpu"), torch.ones(8, 64)))}
from fakes.fake_cuda import H200_COSTS_NS, FakeCuda
from xfertop.reporter._gpu_sampling import GpuSampling
from xfertop.reporter._gpu_timer import GpuTimer
clock = xfertop.reporter._get_clock()
clock.gap.timer = GpuTimer(FakeCuda(costs=H200_COSTS_NS), 0)
clock.gap.sampling = GpuSampling(enabled=False); clock.gap.sampling.every = 5
out["fake_k5"] = measure(ro.loops(torch.device("cpu"), torch.ones(8, 64)))
out["cost_us"] = round(clock.gap.sampling.cost_ns / 1000, 2)
print(json.dumps(out))
