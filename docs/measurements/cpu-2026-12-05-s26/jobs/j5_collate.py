"""Variable-length sequences padded by a Python collate_fn (per-token loop), num_workers=2, small GRU."""
import time, torch, sys, random
from torch.utils.data import Dataset, DataLoader
from common import Truth
class Seqs(Dataset):
    def __init__(self):
        random.seed(1); self.seqs = [[random.randrange(1000) for _ in range(random.randint(50, 400))] for _ in range(2048)]
    def __len__(self): return len(self.seqs)
    def __getitem__(self, i): return self.seqs[i]
def collate(batch):
    n = max(len(s) for s in batch)
    out = []
    for s in batch:
        row = [0] * n
        for j, tok in enumerate(s): row[j] = tok
        out.append(row)
    return torch.tensor(out)
loader = DataLoader(Seqs(), batch_size=64, shuffle=True, num_workers=2, collate_fn=collate)
emb = torch.nn.Embedding(1000, 32); head = torch.nn.Linear(32, 1000)
opt = torch.optim.SGD(list(emb.parameters()) + list(head.parameters()), lr=0.1)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x in loader:
        truth.mark("wait")
        h = emb(x[:, :-1]).cumsum(1) / 10
        loss = torch.nn.functional.cross_entropy(head(h).flatten(0, 1), x[:, 1:].flatten())
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model")
        truth.next_step()
        if time.time() > deadline: break
truth.report()
