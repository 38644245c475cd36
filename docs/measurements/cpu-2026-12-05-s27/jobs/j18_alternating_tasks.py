"""Multi-task: each step reads a batch from task A's loader (2 workers, fast) and one from task B's
(num_workers=0, 1 ms a sample of JSON parsing), one forward/backward each, one optimizer step."""
import json, time, torch, sys
from torch.utils.data import Dataset, TensorDataset, DataLoader
from common import Truth
class Parsed(Dataset):
    def __init__(self): self.rows = [json.dumps({"x": [0.5] * 64, "y": i % 4}) for i in range(2048)]
    def __len__(self): return len(self.rows)
    def __getitem__(self, i):
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.0006: pass
        r = json.loads(self.rows[i]); return torch.tensor(r["x"]), r["y"]
a = DataLoader(TensorDataset(torch.randn(8192, 64), torch.randint(0, 4, (8192,))), batch_size=32, shuffle=True, num_workers=2, persistent_workers=True)
b = DataLoader(Parsed(), batch_size=16, shuffle=True)
trunk = torch.nn.Sequential(torch.nn.Linear(64, 1024), torch.nn.ReLU())
heads = torch.nn.ModuleList([torch.nn.Linear(1024, 4), torch.nn.Linear(1024, 4)])
opt = torch.optim.SGD(list(trunk.parameters()) + list(heads.parameters()), lr=0.01)
truth = Truth(); deadline = time.time() + float(sys.argv[1]); ia, ib = iter(a), iter(b)
def draw(it, loader):
    try: return it, next(it)
    except StopIteration:
        it = iter(loader); return it, next(it)
truth.t = time.perf_counter()
while time.time() < deadline:
    ia, (xa, ya) = draw(ia, a); truth.mark("wait")
    loss = torch.nn.functional.cross_entropy(heads[0](trunk(xa)), ya); loss.backward(); truth.mark("model")
    ib, (xb, yb) = draw(ib, b); truth.mark("wait")
    loss = torch.nn.functional.cross_entropy(heads[1](trunk(xb)), yb); loss.backward()
    opt.step(); opt.zero_grad(); truth.mark("model"); truth.next_step()
truth.report()
