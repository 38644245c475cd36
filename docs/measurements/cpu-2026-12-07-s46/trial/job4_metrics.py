"""Tabular classifier that computes per-class metrics in pure Python after every optimizer step and logs every step."""
import argparse, collections, logging, math, sys, time
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
p.add_argument("--epochs", type=int, default=40); args = p.parse_args()
T = Truth(args.truth)
logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(levelname)s %(message)s")
log = logging.getLogger("train")
torch.manual_seed(0)
C = 20
X = torch.randn(20000, 64); W = torch.randn(64, C); Y = (X @ W + 0.5 * torch.randn(20000, C)).argmax(1)
loader = DataLoader(TensorDataset(X, Y), batch_size=256, shuffle=True)
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, C))
opt = torch.optim.Adam(model.parameters(), lr=1e-3); lossf = nn.CrossEntropyLoss()
device = "cpu"; model.to(device)

def class_metrics(preds, labels, conf):
    per_class = collections.defaultdict(lambda: [0, 0])
    for p_, l_ in zip(preds, labels):
        per_class[l_][1] += 1
        if p_ == l_: per_class[l_][0] += 1
        conf[l_][p_] += 1
    accs = {c: h / t for c, (h, t) in sorted(per_class.items())}
    f1s = []
    for c in range(C):
        tp = conf[c][c]; fp = sum(conf[r][c] for r in range(C)) - tp; fn = sum(conf[c]) - tp
        prec = tp / (tp + fp) if tp + fp else 0.0; rec = tp / (tp + fn) if tp + fn else 0.0
        f1s.append(2 * prec * rec / (prec + rec) if prec + rec else 0.0)
    return accs, sum(f1s) / C

t0 = time.time(); step = 0
for ep in range(args.epochs):
    conf = [[0] * C for _ in range(C)]; cls_loss = {}
    for xb, yb in T.wrap(loader):
        T.to("copy"); xb, yb = xb.to(device), yb.to(device)
        T.to("model")
        logits = model(xb); loss = lossf(logits, yb)
        opt.zero_grad(); loss.backward(); opt.step()
        T.to("sync"); lv = loss.item()
        T.to("loop_post")
        rows = logits.detach().tolist(); labs = yb.tolist()
        per_sample = nn.functional.cross_entropy(logits.detach(), yb, reduction="none").tolist()
        ranked = [sorted(range(C), key=r.__getitem__, reverse=True) for r in rows]
        preds = [r[0] for r in ranked]
        top5 = sum(l_ in r[:5] for r, l_ in zip(ranked, labs)) / len(labs)
        accs, macro_f1 = class_metrics(preds, labs, conf)
        # expected calibration error, 15 bins, from softmax computed by hand
        ece_bins = [[0, 0.0, 0.0] for _ in range(15)]
        for r, pr, l_ in zip(rows, preds, labs):
            mx = max(r); z = sum(math.exp(v - mx) for v in r); cf = 1.0 / z
            b = ece_bins[min(int(cf * 15), 14)]; b[0] += 1; b[1] += cf; b[2] += (pr == l_)
        for l_, ls in zip(labs, per_sample):
            cls_loss[l_] = 0.98 * cls_loss.get(l_, ls) + 0.02 * ls
        hardest = max(cls_loss, key=cls_loss.get)
        ece = sum(abs(b[1] - b[2]) for b in ece_bins if b[0]) / len(labs)
        worst = min(accs, key=accs.get); step += 1
        log.info("ep=%d step=%d loss=%.4f batch_acc=%.3f top5=%.3f ece=%.4f macroF1(epoch)=%.4f worst_class=%d(%.2f) hardest=%d",
                 ep, step, lv, sum(p_ == l_ for p_, l_ in zip(preds, labs)) / len(labs), top5, ece, macro_f1, worst, accs[worst], hardest)
print(f"done {step} steps in {time.time() - t0:.1f}s")
T.report()
