"""A Dataset holding its index as 400k Python dicts (paths, labels, boxes), 2 workers, not persistent,
short epochs: each new worker touches the objects' refcounts and copies the parent's pages
(copy-on-write), a cost at every epoch's start."""
import time, torch, sys
from torch.utils.data import Dataset, DataLoader
from common import Truth
class Index(Dataset):
    def __init__(self):
        self.items = [{"path": f"img/{i:07d}.jpg", "label": i % 1000, "boxes": [[i % 7, i % 11, 5, 5]]} for i in range(400_000)]
    def __len__(self): return len(self.items)
    def __getitem__(self, i):
        item = self.items[(i * 7919) % len(self.items)]
        return torch.full((64,), float(item["label"])), item["label"] % 10
loader = DataLoader(Index(), batch_size=64, shuffle=True, num_workers=2)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for step, (x, y) in enumerate(loader):
        truth.mark("wait")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model"); truth.next_step()
        if step == 40 or time.time() > deadline: break
truth.report()
