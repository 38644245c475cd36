"""Slow start (6 s of data prep before the loop), then ~6 s of input-bound training."""
import time, torch, torch.nn as nn
from torch.utils.data import Dataset, DataLoader
t_start = time.time()
time.sleep(6)  # e.g. building an index / downloading
class DS(Dataset):
    def __len__(self): return 4000
    def __getitem__(self, i):
        t = time.perf_counter()
        while time.perf_counter() - t < 0.0002: pass
        return torch.randn(32), i % 2
model = nn.Linear(32, 2); opt = torch.optim.SGD(model.parameters(), lr=0.1)
print(f"loop starts at {time.time() - t_start:.1f}s after the script started", flush=True)
for x, y in DataLoader(DS(), batch_size=32):
    loss = nn.functional.cross_entropy(model(x), y); opt.zero_grad(); loss.backward(); opt.step()
print("done")
