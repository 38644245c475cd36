"""A weighted sampler written in Python (2 ms per index: re-normalising weights), 2 workers, a small MLP.
The sampler runs in the main process inside next(): the wait is the sampler's, not the workers'."""
import random, time, torch, sys
from torch.utils.data import TensorDataset, DataLoader, Sampler
from common import Truth
class SlowWeighted(Sampler):
    def __init__(self, n): self.n = n; self.w = [random.random() for _ in range(n)]
    def __len__(self): return self.n
    def __iter__(self):
        for _ in range(self.n):
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < 0.0004: pass  # re-normalise, draw
            yield random.randrange(self.n)
ds = TensorDataset(torch.randn(4096, 128), torch.randint(0, 10, (4096,)))
loader = DataLoader(ds, batch_size=16, sampler=SlowWeighted(4096), num_workers=2)
model = torch.nn.Sequential(torch.nn.Linear(128, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model"); truth.next_step()
        if time.time() > deadline: break
truth.report()
