# minimal: a collate_fn returns (flat_ids, offsets, y) for an EmbeddingBag: 64 samples a batch, 50 ids per sample
import time, torch
from torch.utils.data import DataLoader
def collate(idx):
    n = len(idx)
    return torch.randint(0, 1000, (n * 50,)), torch.arange(0, n * 50, 50), torch.rand(n)
emb = torch.nn.EmbeddingBag(1000, 32); head = torch.nn.Linear(32, 1)
opt = torch.optim.SGD(list(emb.parameters()) + list(head.parameters()), 0.1)
t0 = time.time(); n = 0
for ids, off, y in DataLoader(range(64 * 300), batch_size=64, collate_fn=collate):
    loss = torch.nn.functional.mse_loss(head(emb(ids, off)).squeeze(1), y)
    opt.zero_grad(); loss.backward(); opt.step(); n += len(y)
    time.sleep(0.01)
print(f"done: {n} samples, {n/(time.time()-t0):.0f} samples/s")
