"""A loop under torch.profiler with a schedule (wait 2, warmup 2, active 4, repeat 3; prof.step() each
step) and record_function around its phases, the trace handed to a callback that only counts events:
xfertop's hooks beside the profiler's. 2 workers with a slow-ish __getitem__. Truth: wait, copy, model,
the profiler's step (loop_post)."""
import sys, time, torch
from torch.utils.data import DataLoader, Dataset
from torch.profiler import ProfilerActivity, profile, record_function, schedule
from common import Truth
gpu = torch.cuda.is_available(); dev = torch.device("cuda" if gpu else "cpu")
class Slow(Dataset):
    def __len__(self): return 100000
    def __getitem__(self, i):
        x = torch.randn(64, 64)
        for _ in range(3): x = torch.tanh(x @ x.T / 64)
        return x.flatten()[:1024], i % 10
loader = DataLoader(Slow(), batch_size=64, num_workers=2, pin_memory=gpu)
model = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 10)).to(dev)
opt = torch.optim.Adam(model.parameters())
seen = []
acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
truth = Truth(); deadline = time.time() + float(sys.argv[1])
with profile(activities=acts, schedule=schedule(wait=2, warmup=2, active=4, repeat=3),
             on_trace_ready=lambda p: seen.append(len(p.events()))) as prof:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        with record_function("copy"):
            x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        truth.mark("copy")
        with record_function("model"):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model")
        prof.step()
        truth.mark("loop_post"); truth.next_step()
        if time.time() > deadline: break
print("traces", len(seen))
truth.report()
