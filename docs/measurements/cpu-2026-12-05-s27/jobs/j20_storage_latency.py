"""Samples read from slow storage: 6 ms of latency each (a sleep: network file system), 4 workers, a
small model. The workers wait on storage, not on the cores: more workers would help."""
import time, torch, sys
from torch.utils.data import Dataset, DataLoader
from common import Truth
class Remote(Dataset):
    def __len__(self): return 100000
    def __getitem__(self, i):
        time.sleep(0.006); return torch.randn(64), i % 10
loader = DataLoader(Remote(), batch_size=16, shuffle=True, num_workers=4, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
truth.t = time.perf_counter()
for x, y in loader:
    truth.mark("wait")
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    truth.mark("model"); truth.next_step()
    if time.time() > deadline: break
truth.report()
