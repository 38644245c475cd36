"""MLP regression with a validation pass over its own DataLoader every 40 steps and a torch.save checkpoint every 100 steps (keeps last 2)."""
import argparse, os, time
import torch, torch.nn as nn
from torch.utils.data import TensorDataset, DataLoader

# ---------------- truth clock (only active with --truth) ----------------
class Truth:
    PH = ("wait", "loop_pre", "copy", "model", "sync", "loop_post", "between")
    def __init__(self, on, skip=5):
        self.on, self.skip = on, skip
        self.tot = dict.fromkeys(self.PH, 0.0); self.step = -1; self.cur = None; self.t = None
    def _close(self, now):
        if self.cur is not None and self.step >= self.skip:
            self.tot[self.cur] += now - self.t
    def to(self, ph):
        if not self.on: return
        now = time.perf_counter(); self._close(now); self.cur, self.t = ph, now
    def wrap(self, loader):
        if not self.on:
            yield from loader; return
        self.step += 1; self.to("wait")
        it = iter(loader); first = True
        while True:
            if not first:
                self.step += 1; self.to("wait")
            first = False
            try: b = next(it)
            except StopIteration:
                self.step -= 1  # the raising next() belongs to the last step (its wait)
                self.to("between"); self.step += 1; return
            self.to("loop_pre")
            yield b
    def report(self):
        if not self.on: return
        self.to(None)
        tot = sum(self.tot.values()); ins = tot - self.tot["between"]
        s = " ".join(f"{k}={100*v/tot:.1f}%" for k, v in self.tot.items())
        s2 = " ".join(f"{k}={100*v/ins:.1f}%" for k, v in self.tot.items() if k != "between")
        print(f"TRUTH steps>={self.skip}: wall={tot:.2f}s | of all: {s} | of in-step time: {s2}")
# -------------------------------------------------------------------------

p = argparse.ArgumentParser(); p.add_argument("--truth", action="store_true")
p.add_argument("--epochs", type=int, default=5); p.add_argument("--val-every", type=int, default=40)
p.add_argument("--ckpt-every", type=int, default=100); p.add_argument("--ckpt-dir", default="/tmp/trial46/ckpt")
args = p.parse_args()
T = Truth(args.truth); os.makedirs(args.ckpt_dir, exist_ok=True)
torch.manual_seed(0)
D = 128
Wt = torch.randn(D, 1) / D ** 0.5
def make(n):
    x = torch.randn(n, D); return x, torch.sin(x @ Wt) + 0.1 * torch.randn(n, 1)
train_ds, val_ds = TensorDataset(*make(24000)), TensorDataset(*make(4096))
train_loader = DataLoader(train_ds, batch_size=128, shuffle=True, num_workers=0)
val_loader = DataLoader(val_ds, batch_size=256, shuffle=False, num_workers=0)
model = nn.Sequential(nn.Linear(D, 768), nn.SiLU(), nn.Linear(768, 768), nn.SiLU(), nn.Linear(768, 768), nn.SiLU(), nn.Linear(768, 1))
opt = torch.optim.Adam(model.parameters(), lr=5e-4); lossf = nn.MSELoss(); device = "cpu"; model.to(device)
vt = {"wait": 0.0, "work": 0.0, "ckpt": 0.0}

def validate():
    model.eval(); tot = 0.0; n = 0
    with torch.no_grad():
        it = iter(val_loader)
        while True:
            a = time.perf_counter()
            try: x, y = next(it)
            except StopIteration: vt["wait"] += time.perf_counter() - a; break
            b = time.perf_counter(); vt["wait"] += b - a
            x, y = x.to(device), y.to(device)
            tot += lossf(model(x), y).item() * len(x); n += len(x)
            vt["work"] += time.perf_counter() - b
    model.train(); return tot / n

t0 = time.time(); step = 0; best = float("inf")
for ep in range(args.epochs):
    for x, y in T.wrap(train_loader):
        T.to("copy"); x, y = x.to(device), y.to(device)
        T.to("model")
        loss = lossf(model(x), y); opt.zero_grad(); loss.backward(); opt.step()
        T.to("loop_post"); step += 1
        if step % args.val_every == 0:
            vl = validate()
            T.to("sync"); lv = loss.item(); T.to("loop_post")
            print(f"step {step} train {lv:.4f} val {vl:.4f}", flush=True)
            best = min(best, vl)
        if step % args.ckpt_every == 0:
            a = time.perf_counter()
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step, "best": best},
                       os.path.join(args.ckpt_dir, f"ckpt_{step:06d}.pt"))
            old = sorted(f for f in os.listdir(args.ckpt_dir) if f.startswith("ckpt_"))[:-2]
            for f in old: os.remove(os.path.join(args.ckpt_dir, f))
            vt["ckpt"] += time.perf_counter() - a
            print(f"saved checkpoint at step {step}", flush=True)
print(f"done {step} steps in {time.time() - t0:.1f}s, best val {best:.4f}")
if args.truth:
    print(f"TRUTH-detail: val loader wait {vt['wait']:.2f}s, val compute {vt['work']:.2f}s, checkpoints {vt['ckpt']:.2f}s (all inside loop_post above; includes warm-up steps)")
T.report()
