# minimal (one nn.Module takes ids, offsets): a collate_fn returns (flat_ids, offsets, y) for an EmbeddingBag: 64 samples a batch, 30-70 ids per sample (varies)
import random, time, torch
from torch.utils.data import DataLoader
def collate(idx):
    lens = [random.randint(30, 70) for _ in idx]
    off = torch.tensor([0] + lens[:-1]).cumsum(0)
    return torch.randint(0, 1000, (sum(lens),)), off, torch.rand(len(idx))
class M(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.emb = torch.nn.EmbeddingBag(1000, 32); self.head = torch.nn.Linear(32, 1)
    def forward(self, ids, off):
        return self.head(self.emb(ids, off)).squeeze(1)
model = M()
opt = torch.optim.SGD(model.parameters(), 0.1)
t0 = time.time(); n = 0
for ids, off, y in DataLoader(range(64 * 300), batch_size=64, collate_fn=collate):
    loss = torch.nn.functional.mse_loss(model(ids, off), y)
    opt.zero_grad(); loss.backward(); opt.step(); n += len(y)
    time.sleep(0.01)
print(f"done: {n} samples, {n/(time.time()-t0):.0f} samples/s")
