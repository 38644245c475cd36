"""Click-through-rate model (EmbeddingBag + MLP) on raw string records; a custom collate_fn in
2 DataLoader workers does the feature work: tokenising categorical strings, hashing n-grams into
buckets, building EmbeddingBag offsets, in pure Python."""
import argparse, hashlib, random, sys, time
import torch, torch.nn as nn
from torch.utils.data import DataLoader, Dataset
from truth import Truth

p = argparse.ArgumentParser(); p.add_argument("--truth", action="store_true"); p.add_argument("--steps", type=int, default=150)
p.add_argument("--workers", type=int, default=2)
args = p.parse_args()
torch.manual_seed(0)
BUCKETS, B = 2 ** 18, 256
WORDS = [f"w{i}" for i in range(5000)]


class Clicks(Dataset):
    def __len__(self):
        return 10 ** 6

    def __getitem__(self, i):
        r = random.Random(i)
        rec = {"query": " ".join(r.choices(WORDS, k=r.randint(3, 12))),
               "ad_title": " ".join(r.choices(WORDS, k=r.randint(5, 15))),
               "site": f"site{r.randint(0, 999)}", "hour": r.randint(0, 23),
               "dense": [r.random() for _ in range(13)]}
        return rec, float(r.random() < 0.2)


def h(s):
    return int.from_bytes(hashlib.blake2b(s.encode(), digest_size=8).digest(), "little") % BUCKETS


def collate(items):
    ids, offsets, dense, y = [], [], [], []
    for rec, lab in items:
        offsets.append(len(ids))
        for field in ("query", "ad_title"):
            toks = rec[field].split()
            ids.extend(h(f"{field}:{t}") for t in toks)
            ids.extend(h(f"{field}:{a}_{b}") for a, b in zip(toks, toks[1:]))           # bigrams
            ids.extend(h(f"{field}:{a}_{b}_{c}") for a, b, c in zip(toks, toks[1:], toks[2:]))  # trigrams
        q = rec["query"]
        ids.extend(h(f"q3:{q[i:i+3]}") for i in range(len(q) - 2))                     # char trigrams
        ids.append(h(f"site:{rec['site']}")); ids.append(h(f"hour:{rec['hour']}"))
        ids.append(h(f"site_hour:{rec['site']}_{rec['hour']}"))
        dense.append(rec["dense"]); y.append(lab)
    return torch.tensor(ids), torch.tensor(offsets), torch.tensor(dense), torch.tensor(y)


class CTR(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(BUCKETS, 64, mode="sum", sparse=True)
        self.mlp = nn.Sequential(nn.Linear(64 + 13, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1))

    def forward(self, ids, off, dense):
        return self.mlp(torch.cat([self.emb(ids, off), dense], 1)).squeeze(1)


loader = DataLoader(Clicks(), batch_size=B, shuffle=True, num_workers=args.workers, collate_fn=collate)
model = CTR()
opt = torch.optim.Adagrad(model.parameters(), lr=0.02)
lossf = nn.BCEWithLogitsLoss()
T = Truth(enabled=args.truth)
step = 0
T.begin()
for ids, off, dense, y in loader:
    T.mark("wait")
    out = model(ids, off, dense)
    loss = lossf(out, y)
    opt.zero_grad(); loss.backward(); opt.step()
    T.mark("model")
    if step % 25 == 0:
        l = loss.item(); T.mark("sync")
        print(f"step {step} loss {l:.4f}", flush=True)
    T.mark("post")
    T.end_step(); T.begin()
    step += 1
    if step >= args.steps:
        break
print(f"done: {step} steps, final loss {loss.item():.4f}")
T.report(windows=1)
