"""Job 4: epochs of 30 train steps (loader: num_workers=2, persistent, moderately slow samples) then a
20-step validation under torch.no_grad with its own non-persistent 2-worker loader."""
import argparse, time, json, os
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser(); p.add_argument("--truth", action="store_true"); p.add_argument("--seconds", type=float, default=15)
args = p.parse_args()

class Features(Dataset):
    """Each sample: a windowed signal -> log power spectrum (about 1 ms of CPU)."""
    def __init__(self, n, seed): self.n, self.seed = n, seed
    def __len__(self): return self.n
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.seed * 100003 + i)
        sig = torch.randn(8192, generator=g) * torch.hann_window(8192)
        spec = torch.fft.rfft(sig).abs().pow(2)
        spec = spec + torch.fft.rfft(sig.roll(100)).abs().pow(2)
        spec = spec + torch.fft.rfft(sig.roll(200)).abs().pow(2)
        return torch.log1p(spec[:4096]).reshape(256, 16).mean(1), i % 20

B = 32
torch.manual_seed(0)
# experiment knobs (defaults = the job as written)
_w = int(os.environ.get("J4_WORKERS", "2")); _pf = {"prefetch_factor": int(os.environ["J4_PREFETCH"])} if os.environ.get("J4_PREFETCH") else {}
train_loader = DataLoader(Features(30 * B, 1), batch_size=B, shuffle=True, num_workers=_w, persistent_workers=True, **_pf)
val_loader = DataLoader(Features(20 * B, 2), batch_size=B, shuffle=False, num_workers=_w, persistent_workers=bool(os.environ.get("J4_VAL_PERSIST")), **_pf)
model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 20))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
dev = torch.device("cpu")
pc = time.perf_counter
PH = {ph: {"data": 0.0, "copy": 0.0, "compute": 0.0, "wall": 0.0, "steps": 0} for ph in ("train", "val")}
gstep = 0; start = pc(); first_loss = None; epoch = 0

def timed_loop(loader, phase, fn):
    global gstep
    t_iter = pc()
    it = iter(loader)
    a = t_iter
    while True:
        try:
            x, y = next(it)
        except StopIteration:
            break
        b = pc()
        x, y = x.to(dev), y.to(dev)
        c = pc()
        fn(x, y)
        d = pc()
        if gstep >= 5:
            S = PH[phase]
            S["data"] += b - a; S["copy"] += c - b; S["compute"] += d - c; S["wall"] += d - a; S["steps"] += 1
        gstep += 1
        a = pc()

def train_step(x, y):
    global first_loss
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    if first_loss is None: first_loss = loss.item()

val_stats = []
def val_step(x, y):
    out = model(x)
    val_stats.append((nn.functional.cross_entropy(out, y, reduction="sum"), (out.argmax(1) == y).sum(), len(y)))

while pc() - start < args.seconds:
    model.train(); t_tr = time.time()
    timed_loop(train_loader, "train", train_step)
    model.eval(); val_stats.clear(); t_va = time.time()
    with torch.no_grad():
        timed_loop(val_loader, "val", val_step)
    n = sum(s[2] for s in val_stats)
    print(f"epoch {epoch} train_start={t_tr:.2f} val_start={t_va:.2f} val_end={time.time():.2f} "
          f"val_loss={sum(float(s[0]) for s in val_stats)/n:.4f} val_acc={sum(int(s[1]) for s in val_stats)/n:.3f}", flush=True)
    epoch += 1
end = pc()
if args.truth:
    out = {}
    tot = {k: sum(PH[ph][k] for ph in PH) for k in ("data", "copy", "compute", "wall", "steps")}
    for name, S in list(PH.items()) + [("all", tot)]:
        w = S["wall"]
        sh = {k: round(S[k] / w, 4) for k in ("data", "copy", "compute")}; sh["other"] = round(1 - sum(sh.values()), 4)
        out[name] = {"steps": S["steps"], "ms_per_step": round(1000 * w / max(1, S["steps"]), 2), "shares": sh}
    print("truth", json.dumps({"job": "job4", **out}))
print(f"result job=job4 first_loss={first_loss:.3f} epochs={epoch} steps={gstep} samples_per_s={gstep*B/(end-start):.1f}")
