"""Gradient accumulation (4 micro-batches per optimizer step); Dataset.__getitem__ sleeps 2 ms (storage latency), 2 persistent workers."""
import argparse, math, time
import torch, torch.nn as nn
from torch.utils.data import Dataset, DataLoader

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
p.add_argument("--epochs", type=int, default=8); p.add_argument("--accum", type=int, default=4)
args = p.parse_args()
T = Truth(args.truth)
torch.manual_seed(0)

class RemoteFeatures(Dataset):
    """Pretend each record is fetched from a slow key-value store."""
    def __init__(self, n, dim=256, classes=10):
        self.n, self.dim, self.classes = n, dim, classes
        g = torch.Generator().manual_seed(123); self.W = torch.randn(dim, classes, generator=g)
    def __len__(self): return self.n
    def __getitem__(self, i):
        time.sleep(0.002)
        g = torch.Generator().manual_seed(i)
        x = torch.randn(self.dim, generator=g)
        return x, int((x @ self.W).argmax())

if __name__ == "__main__":
    ds = RemoteFeatures(2048)
    loader = DataLoader(ds, batch_size=16, shuffle=True, num_workers=2, persistent_workers=True)
    model = nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 1024), nn.GELU(),
                          nn.Linear(1024, 1024), nn.GELU(), nn.Linear(1024, 10))
    device = torch.device("cpu"); model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * math.ceil(len(loader) / args.accum))
    lossf = nn.CrossEntropyLoss(); t0 = time.time(); micro = 0; upd = 0
    for ep in range(args.epochs):
        run = 0.0
        for x, y in T.wrap(loader):
            T.to("copy"); x = x.to(device); y = y.to(device)
            T.to("model")
            loss = lossf(model(x), y) / args.accum
            loss.backward(); micro += 1
            if micro % args.accum == 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step(); opt.zero_grad(set_to_none=True); sched.step(); upd += 1
            T.to("sync"); run += loss.item() * args.accum
            T.to("loop_post")
            if micro % (args.accum * 25) == 0:
                print(f"ep {ep} update {upd} loss {run / (args.accum * 25):.4f} lr {sched.get_last_lr()[0]:.2e}", flush=True); run = 0.0
    print(f"done {micro} micro-batches, {upd} updates in {time.time() - t0:.1f}s")
    T.report()
