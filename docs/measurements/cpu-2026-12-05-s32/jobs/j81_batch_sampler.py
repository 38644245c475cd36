"""Batches fetched whole: DataLoader(batch_size=None) over a BatchSampler, the Dataset's __getitem__ taking
a list of 128 indices and gathering rows (fast, vectorised), 2 workers. Counting steps and samples where
no DataLoader batching happens. Truth: wait, copy, model."""
import sys, time, torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler
from common import Truth
gpu = torch.cuda.is_available(); dev = torch.device("cuda" if gpu else "cpu")
class Rows(Dataset):
    def __init__(self, n): self.x = torch.randn(n, 256); self.y = torch.randint(0, 10, (n,))
    def __len__(self): return len(self.x)
    def __getitem__(self, idx):
        idx = torch.as_tensor(idx)
        return self.x[idx] * 1.01, self.y[idx]
data = Rows(50000)
loader = DataLoader(data, batch_size=None, sampler=BatchSampler(RandomSampler(data), 128, drop_last=True),
                    num_workers=2, pin_memory=gpu, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Linear(256, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
                            torch.nn.Linear(2048, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
truth = Truth(); deadline = time.time() + float(sys.argv[1]); samples = 0; began = time.time()
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        truth.mark("copy")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model"); truth.next_step(); samples += len(y)
        if time.time() > deadline: break
print(f"samples/s {samples / (time.time() - began):.1f}")
truth.report()
