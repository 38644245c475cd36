# Novel job: map-style dataset of variable-length "token" lists, num_workers=0, a collate_fn that pads
# in Python (slow), an embedding bag model; a validation pass every 50 steps over the same kind of loader
# (num_workers=0); .item() each step for a running loss.
import time, sys, json, random
import torch, torch.nn as nn
from torch.utils.data import DataLoader, Dataset
random.seed(1)
DATA = [[random.randrange(5000) for _ in range(random.randrange(20, 200))] for _ in range(4000)]
class Toks(Dataset):
    def __len__(self): return len(DATA)
    def __getitem__(self, i): return DATA[i], i % 2
def pad(batch):
    n = max(len(t) for t, _ in batch)
    rows = [t + [0] * (n - len(t)) for t, _ in batch]
    for _ in range(3):
        rows = [[(v * 1) for v in r] for r in rows]
    return torch.tensor(rows), torch.tensor([y for _, y in batch])
model = nn.Sequential(nn.EmbeddingBag(5000, 64), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.SGD(model.parameters(), 0.1)
tl = DataLoader(Toks(), batch_size=64, shuffle=True, collate_fn=pad)
vl = DataLoader(Toks(), batch_size=256, collate_fn=pad, sampler=range(512))
truth = {"wait": 0.0, "model": 0.0, "val": 0.0}
end = time.monotonic() + float(sys.argv[1]); t0 = time.perf_counter(); n = 0; run = 0.0
while time.monotonic() < end:
    for x, y in tl:
        t1 = time.perf_counter(); truth["wait"] += t1 - t0
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step(); run += loss.item()
        t0 = time.perf_counter(); truth["model"] += t0 - t1
        n += 1
        if n % 50 == 0:
            with torch.no_grad():
                acc = sum(int((model(a).argmax(1) == b).sum()) for a, b in vl)
            t1 = time.perf_counter(); truth["val"] += t1 - t0; t0 = t1
        if time.monotonic() > end: break
tot = sum(truth.values())
print("TRUTH", json.dumps({k: round(v / tot, 3) for k, v in truth.items()}), "steps", n)
