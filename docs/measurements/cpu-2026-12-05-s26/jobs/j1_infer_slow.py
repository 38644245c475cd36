"""Inference only (no_grad, no optimizer): JSON records parsed per sample, num_workers=0."""
import json, time, torch, sys
from torch.utils.data import Dataset, DataLoader
from common import Truth
class Records(Dataset):
    def __init__(self): self.rows = [json.dumps({"x": [float(i % 7)] * 256, "y": i % 10}) for i in range(4096)]
    def __len__(self): return len(self.rows)
    def __getitem__(self, i):
        r = json.loads(self.rows[i]); t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.0004: pass
        return torch.tensor(r["x"]), r["y"]
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).eval()
loader = DataLoader(Records(), batch_size=32, shuffle=True)
truth = Truth(); deadline = time.time() + float(sys.argv[1]); correct = 0
with torch.no_grad():
    while time.time() < deadline:
        truth.t = time.perf_counter()
        for x, y in loader:
            truth.mark("wait")
            out = model(x)
            truth.mark("model")
            correct += int((out.argmax(1) == y).sum())
            truth.mark("sync")
            truth.next_step()
            if time.time() > deadline: break
truth.report(correct=correct)
