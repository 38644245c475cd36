"""Click-through model: IterableDataset streaming synthetic JSON records (json.loads per record) through 2 workers, sharded by worker id."""
import argparse, json, random, time
import torch, torch.nn as nn
from torch.utils.data import IterableDataset, DataLoader, get_worker_info

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
p.add_argument("--records", type=int, default=80000); args = p.parse_args()
T = Truth(args.truth)
torch.manual_seed(0)
NF = 40

class JsonStream(IterableDataset):
    def __init__(self, n): self.n = n
    def lines(self, seed, start, stop):
        r = random.Random(seed)
        for i in range(start, stop):
            rec = {"id": i, "user": f"u{r.randrange(10 ** 6)}", "ts": 1.7e9 + i,
                   "feats": {f"f{k}": round(r.gauss(0, 1), 4) for k in range(NF)},
                   "tags": [r.choice("abcdefgh") for _ in range(r.randint(1, 6))]}
            rec["click"] = int(sum(rec["feats"][f"f{k}"] for k in range(5)) + 0.3 * len(rec["tags"]) > 1.0)
            yield json.dumps(rec)
    def __iter__(self):
        wi = get_worker_info(); w, nw = (wi.id, wi.num_workers) if wi else (0, 1)
        per = self.n // nw
        for line in self.lines(w, w * per, (w + 1) * per):
            rec = json.loads(line)
            x = torch.tensor([rec["feats"][f"f{k}"] for k in range(NF)] + [len(rec["tags"]), ("a" in rec["tags"]) * 1.0])
            yield x, torch.tensor(float(rec["click"]))

loader = DataLoader(JsonStream(args.records), batch_size=128, num_workers=2)
model = nn.Sequential(nn.Linear(NF + 2, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-3); lossf = nn.BCEWithLogitsLoss(); device = "cpu"
t0 = time.time(); step = 0; ema = None
for x, y in T.wrap(loader):
    T.to("copy"); x, y = x.to(device), y.to(device)
    T.to("model")
    loss = lossf(model(x).squeeze(1), y); opt.zero_grad(); loss.backward(); opt.step()
    T.to("sync"); lv = loss.item(); T.to("loop_post")
    ema = lv if ema is None else 0.99 * ema + 0.01 * lv; step += 1
    if step % 100 == 0: print(f"step {step} loss(ema) {ema:.4f}", flush=True)
print(f"done {step} steps in {time.time() - t0:.1f}s")
T.report()
