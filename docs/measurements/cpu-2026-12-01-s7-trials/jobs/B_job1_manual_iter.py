"""Job 1: spectral features computed per sample (FFT, ~2 ms CPU), manual iterator loop with
StopIteration restart, num_workers=2 (not persistent), small MLP."""
import argparse, time, json, os
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser(); p.add_argument("--truth", action="store_true"); p.add_argument("--seconds", type=float, default=15)
args = p.parse_args()

class Spectra(Dataset):
    def __len__(self): return 640
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        sig = torch.randn(16384, generator=g)
        acc = torch.zeros(16384 // 2 + 1)
        for r in range(6):
            acc += torch.fft.rfft(sig * (r + 1)).abs()
        return torch.log1p(acc)[:8192].reshape(128, 64).mean(1), i % 10

torch.manual_seed(0)
_w = int(os.environ.get("J1_WORKERS", "2"))  # experiment knobs (defaults = the job as written)
_kw = {"persistent_workers": True} if os.environ.get("J1_PERSIST") else {}
if os.environ.get("J1_PREFETCH"): _kw["prefetch_factor"] = int(os.environ["J1_PREFETCH"])
loader = DataLoader(Spectra(), batch_size=32, shuffle=True, num_workers=_w, **_kw)
model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
dev = torch.device("cpu")
T = {"data": 0.0, "copy": 0.0, "compute": 0.0}; t0 = None; steps = 0
pc = time.perf_counter
it = iter(loader)
start = pc(); first_loss = None
for step in range(100000):
    if step == 5: t0 = pc()
    a = pc()
    try:
        x, y = next(it)
    except StopIteration:
        it = iter(loader)
        x, y = next(it)
    b = pc()
    x, y = x.to(dev), y.to(dev)
    c = pc()
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    d = pc()
    if t0 is not None:
        T["data"] += b - a; T["copy"] += c - b; T["compute"] += d - c
    if first_loss is None: first_loss = loss.item()
    steps += 1
    if pc() - start > args.seconds: break
end = pc()
if args.truth:
    w = end - t0
    sh = {k: round(v / w, 4) for k, v in T.items()}; sh["other"] = round(1 - sum(sh.values()), 4)
    print("truth", json.dumps({"job": "job1", "steps": steps, "ms_per_step": round(1000 * w / (steps - 5), 2), "shares": sh}))
print(f"result job=job1 first_loss={first_loss:.3f} steps={steps} samples_per_s={steps*32/(end-start):.1f}")
