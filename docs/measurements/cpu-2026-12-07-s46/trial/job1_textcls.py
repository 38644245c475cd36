"""Text classifier: slow pure-Python WordPiece-ish tokenizer in collate_fn, num_workers=0."""
import argparse, random, re, time, unicodedata
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
p.add_argument("--epochs", type=int, default=18); args = p.parse_args()
T = Truth(args.truth)
torch.manual_seed(0); rnd = random.Random(0)

SYL = ["ka", "lo", "mi", "tre", "spo", "qu", "ven", "dra", "il", "os", "ner", "bu", "ix", "zel", "thor", "ama"]
WORDS = ["".join(rnd.choice(SYL) for _ in range(rnd.randint(1, 4))) for _ in range(3000)]
POS, NEG = set(WORDS[:40]), set(WORDS[40:80])

def make_sentence(r):
    n = r.randint(20, 60); ws = [r.choice(WORDS) for _ in range(n)]
    lab = r.random() < 0.5
    for _ in range(3): ws[r.randrange(n)] = r.choice(WORDS[:40] if lab else WORDS[40:80])
    s = " ".join(w.capitalize() if r.random() < 0.1 else w for w in ws)
    s = s.replace(" ", ", ", 2) + r.choice([".", "!", "?", "..."])
    return s, int(lab)

class TextDS(Dataset):
    def __init__(self, n, seed):
        r = random.Random(seed); self.items = [make_sentence(r) for _ in range(n)]
    def __len__(self): return len(self.items)
    def __getitem__(self, i): return self.items[i]

class SlowTokenizer:
    """Greedy longest-match subword tokenizer, written the naive way."""
    def __init__(self, words):
        pieces = set()
        for w in words:
            for i in range(0, len(w), 2): pieces.add(w[i:i + 3]); pieces.add(w[i:i + 2])
        self.vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2}
        for pc in sorted(pieces): self.vocab[pc] = len(self.vocab); self.vocab["##" + pc] = len(self.vocab)
    def normalize(self, text):
        out = []
        for ch in unicodedata.normalize("NFKD", text):
            if unicodedata.category(ch).startswith("P"): out.append(" ")
            else: out.append(ch.lower())
        return "".join(out)
    def tokenize(self, text):
        ids = [self.vocab["[CLS]"]]
        for w in re.split(r"\s+", self.normalize(text).strip()):
            start = 0
            while start < len(w):
                end = len(w); found = None
                while end > start:
                    sub = w[start:end] if start == 0 else "##" + w[start:end]
                    if sub in self.vocab: found = sub; break
                    end -= 1
                if found is None: ids.append(1); break
                ids.append(self.vocab[found]); start = end
        return ids

tok = SlowTokenizer(WORDS)

def collate(batch):
    seqs = [tok.tokenize(t) for t, _ in batch]
    L = max(len(s) for s in seqs)
    ids = torch.zeros(len(seqs), L, dtype=torch.long)
    for i, s in enumerate(seqs): ids[i, :len(s)] = torch.tensor(s)
    return ids, torch.tensor([y for _, y in batch])

class Clf(nn.Module):
    def __init__(self, V):
        super().__init__(); self.emb = nn.Embedding(V, 64, padding_idx=0)
        self.mlp = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 2))
    def forward(self, ids):
        m = (ids != 0).float().unsqueeze(-1)
        h = (self.emb(ids) * m).sum(1) / m.sum(1)
        return self.mlp(h)

device = torch.device("cpu")
train = DataLoader(TextDS(4000, 1), batch_size=32, shuffle=True, collate_fn=collate, num_workers=0)
model = Clf(len(tok.vocab)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=3e-3); lossf = nn.CrossEntropyLoss()
t0 = time.time(); step = 0
for ep in range(args.epochs):
    tot = 0.0; n = 0
    for ids, y in T.wrap(train):
        T.to("copy"); ids, y = ids.to(device), y.to(device)
        T.to("model")
        out = model(ids); loss = lossf(out, y)
        opt.zero_grad(); loss.backward(); opt.step()
        T.to("sync"); lv = loss.item()
        T.to("loop_post")
        tot += lv; n += 1; step += 1
        if step % 50 == 0: print(f"step {step} loss {lv:.4f}", flush=True)
    print(f"epoch {ep} mean loss {tot / n:.4f}", flush=True)
print(f"done {step} steps in {time.time() - t0:.1f}s")
T.report()
