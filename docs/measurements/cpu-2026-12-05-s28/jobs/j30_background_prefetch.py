"""A BackgroundGenerator (prefetch_generator's pattern): a thread iterates the DataLoader into a
queue of 4 and the loop takes batches from it. 2 workers, 3 ms a sample: the loop waits for data."""
import queue, threading, time, torch, sys
from torch.utils.data import Dataset, DataLoader
from common import Truth
class Slow(Dataset):
    def __len__(self): return 4096
    def __getitem__(self, i):
        time.sleep(0.003)
        return torch.randn(256), i % 10
class BackgroundGenerator(threading.Thread):
    def __init__(self, it, max_prefetch=4):
        super().__init__(daemon=True); self.q = queue.Queue(max_prefetch); self.it = it; self.start()
    def run(self):
        for item in self.it: self.q.put(item)
        self.q.put(None)
    def __iter__(self): return self
    def __next__(self):
        item = self.q.get()
        if item is None: raise StopIteration
        return item
loader = DataLoader(Slow(), batch_size=32, shuffle=True, num_workers=2, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in BackgroundGenerator(loader):
        truth.mark("wait")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model"); truth.next_step()
        if time.time() > deadline: break
truth.report()
