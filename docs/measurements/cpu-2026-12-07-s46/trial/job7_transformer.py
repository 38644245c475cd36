"""Small transformer language model on an in-memory token tensor (model-heavy, fast data): expected compute-bound."""
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
p.add_argument("--steps", type=int, default=550); args = p.parse_args()
T = Truth(args.truth)
torch.manual_seed(0)
V, S = 512, 64
corpus = torch.randint(0, V, (200_000,))
corpus[1::3] = (corpus[0::3][: len(corpus[1::3])] * 7 + 3) % V   # some learnable structure

class Windows(Dataset):
    def __len__(self): return (len(corpus) - S - 1) // 17
    def __getitem__(self, i):
        s = i * 17; return corpus[s:s + S], corpus[s + 1:s + S + 1]

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 64); self.pos = nn.Parameter(torch.zeros(S, 64))
        layer = nn.TransformerEncoderLayer(64, 4, 256, dropout=0.1, batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, 2); self.head = nn.Linear(64, V)
        self.register_buffer("mask", torch.triu(torch.full((S, S), float("-inf")), 1))
    def forward(self, x):
        return self.head(self.enc(self.emb(x) + self.pos, mask=self.mask, is_causal=True))

loader = DataLoader(Windows(), batch_size=16, shuffle=True, drop_last=True)
model = LM(); opt = torch.optim.AdamW(model.parameters(), lr=1e-3); device = "cpu"
t0 = time.time(); step = 0; done = False
while not done:
    for x, y in T.wrap(loader):
        T.to("copy"); x, y = x.to(device), y.to(device)
        T.to("model")
        logits = model(x); loss = nn.functional.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
        opt.zero_grad(); loss.backward(); torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0); opt.step()
        T.to("loop_post"); step += 1
        if step % 100 == 0:
            T.to("sync"); lv = loss.item(); T.to("loop_post")
            print(f"step {step} loss {lv:.3f} ppl {math.exp(lv):.1f}", flush=True)
        if step >= args.steps: done = True; break
print(f"done {step} steps in {time.time() - t0:.1f}s")
T.report()
