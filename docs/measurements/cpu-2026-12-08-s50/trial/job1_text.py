"""Text classifier: EmbeddingBag + MLP; collate_fn tokenises raw strings in Python."""
import random, re, sys, argparse, zlib
import torch, torch.nn as nn
from torch.utils.data import Dataset, DataLoader
from truth import Truth, pc

ap = argparse.ArgumentParser(); ap.add_argument("--workers", type=int, default=0)
ap.add_argument("--epochs", type=int, default=8); args = ap.parse_args()
torch.manual_seed(0); rng = random.Random(0)
WORDS = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(5000)]
class Reviews(Dataset):
    def __init__(self, n):
        r = random.Random(1); self.items = []
        for i in range(n):
            y = r.randint(0, 3)
            words = [WORDS[(r.randint(0, 4999) + y * 37 * (r.random() < 0.3)) % 5000] for _ in range(r.randint(120, 220))]
            text = " ".join(w.capitalize() if r.random() < .1 else w for w in words) + "!"
            self.items.append((text, y))
    def __len__(self): return len(self.items)
    def __getitem__(self, i): return self.items[i]

NB = 1 << 15
TOK = re.compile(r"[a-z]+")
def tokenize(text):
    toks = TOK.findall(text.lower())
    ids = [zlib.crc32(t.encode()) % NB for t in toks]
    ids += [zlib.crc32((a + "_" + b).encode()) % NB for a, b in zip(toks, toks[1:])]   # bigrams
    for t in toks:  # char trigrams
        tt = "<" + t + ">"
        ids.extend(zlib.crc32(tt[k:k+3].encode()) % NB for k in range(len(tt) - 2))
    return ids
def collate(batch):
    ids, offs, ys = [], [], []
    for text, y in batch:
        offs.append(len(ids)); ids.extend(tokenize(text)); ys.append(y)
    return torch.tensor(ids), torch.tensor(offs), torch.tensor(ys)

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(NB, 64, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 4))
    def forward(self, ids, offs): return self.mlp(self.emb(ids, offs))

ds = Reviews(2400)
loader = DataLoader(ds, batch_size=64, shuffle=True, collate_fn=collate, num_workers=args.workers)
model = Model(); opt = torch.optim.Adam(model.parameters(), 1e-3); lossf = nn.CrossEntropyLoss()
truth = Truth()
for ep in range(args.epochs):
    tot = 0.0; n = 0
    t0 = pc(); it = iter(loader)
    while True:
        try: ids, offs, y = next(it)
        except StopIteration: break
        t1 = pc()
        ids, offs, y = ids.to("cpu"), offs.to("cpu"), y.to("cpu")
        t2 = pc()
        loss = lossf(model(ids, offs), y); opt.zero_grad(); loss.backward(); opt.step()
        t3 = pc()
        tot += loss.item(); n += 1
        t4 = pc(); truth.add(t0, t1, t2, t3, t4); t0 = pc()
    print(f"epoch {ep} mean loss {tot/n:.4f}")
truth.report()
