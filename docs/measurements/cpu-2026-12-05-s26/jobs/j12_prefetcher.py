"""The apex-style data_prefetcher (next batch fetched at the end of each step), a `while input is not None`
loop with per-step Python metrics after the optimizer step, 2 workers."""
import time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth

class DataPrefetcher:
    def __init__(self, loader):
        self.loader = iter(loader)
        self.preload()
    def preload(self):
        try:
            self.next_input, self.next_target = next(self.loader)
        except StopIteration:
            self.next_input = self.next_target = None
    def next(self):
        x, y = self.next_input, self.next_target
        self.preload()
        return x, y

ds = TensorDataset(torch.randn(16384, 256), torch.randint(0, 100, (16384,)))
loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=2, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 100))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
truth = Truth(); deadline = time.time() + float(sys.argv[1]); confusion = [[0] * 100 for _ in range(100)]
while time.time() < deadline:
    truth.t = time.perf_counter()
    prefetcher = DataPrefetcher(loader)
    x, y = prefetcher.next()
    truth.mark("wait")
    while x is not None:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model")
        scores = model[2].weight[:, :8].tolist()
        for row, values in zip(y.tolist(), scores * 1):
            top = sorted(range(8), key=values.__getitem__)[-3:]
            confusion[row % 100][top[-1]] += 1
        truth.mark("loop_post")
        truth.next_step()
        x, y = prefetcher.next()
        truth.mark("wait")
        if time.time() > deadline: break
truth.report()
