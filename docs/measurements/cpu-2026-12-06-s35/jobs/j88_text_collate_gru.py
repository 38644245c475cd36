"""A small text classifier: variable-length token lists padded by a Python collate_fn in the loop's own
process (num_workers=0), an embedding + GRU, clip_grad_norm_, a LambdaLR scheduler stepped every step, and
per-step accuracy with .item(). Truth: wait (the loader: __getitem__ and collate), copy, model, sync
(.item() of the metrics), loop_post (the running averages, the scheduler)."""
import random, sys, time, torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from common import Truth
gpu = torch.cuda.is_available(); dev = torch.device("cuda" if gpu else "cpu")
class Texts(Dataset):
    def __init__(self, n):
        rng = random.Random(0)
        self.items = [([rng.randrange(1, 5000) for _ in range(rng.randrange(20, 200))], rng.randrange(4)) for _ in range(n)]
    def __len__(self): return len(self.items)
    def __getitem__(self, i):
        tokens, label = self.items[i]
        return [t if random.random() > 0.1 else 0 for t in tokens], label   # token dropout, in Python
def collate(batch):
    longest = max(len(t) for t, _ in batch)
    ids = torch.tensor([t + [0] * (longest - len(t)) for t, _ in batch])
    return ids, torch.tensor([label for _, label in batch])
class Net(nn.Module):
    def __init__(self):
        super().__init__(); self.emb = nn.Embedding(5000, 64); self.gru = nn.GRU(64, 96, batch_first=True); self.out = nn.Linear(96, 4)
    def forward(self, ids):
        _, h = self.gru(self.emb(ids)); return self.out(h[-1])
loader = DataLoader(Texts(6000), batch_size=32, shuffle=True, num_workers=0, collate_fn=collate)
model = Net().to(dev); opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 100))
truth = Truth(); deadline = time.time() + float(sys.argv[1]); avg_loss = avg_acc = 0.0
while time.time() < deadline:
    truth.t = time.perf_counter()
    for ids, y in loader:
        truth.mark("wait")
        ids, y = ids.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        truth.mark("copy")
        logits = model(ids); loss = nn.functional.cross_entropy(logits, y)
        opt.zero_grad(); loss.backward(); nn.utils.clip_grad_norm_(model.parameters(), 1.0); opt.step()
        truth.mark("model")
        l, a = loss.item(), (logits.argmax(1) == y).float().mean().item()
        truth.mark("sync")
        avg_loss, avg_acc = 0.98 * avg_loss + 0.02 * l, 0.98 * avg_acc + 0.02 * a
        sched.step()
        truth.mark("loop_post"); truth.next_step()
        if time.time() > deadline: break
truth.report(acc=round(avg_acc, 3))
