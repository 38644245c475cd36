"""Training (2 workers, fast) with a validation pass every 40 steps over a slow num_workers=0 loader (~40% of the time)."""
import time, torch, sys, json
from torch.utils.data import Dataset, TensorDataset, DataLoader
from common import Truth
class SlowVal(Dataset):
    def __init__(self): self.rows = [json.dumps({"x": [0.1] * 128, "y": i % 10}) for i in range(640)]
    def __len__(self): return len(self.rows)
    def __getitem__(self, i):
        r = json.loads(self.rows[i]); t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.0008: pass
        return torch.tensor(r["x"]), r["y"]
train = DataLoader(TensorDataset(torch.randn(16384, 128), torch.randint(0, 10, (16384,))), batch_size=64, shuffle=True, num_workers=2, persistent_workers=True)
val = DataLoader(SlowVal(), batch_size=64)
model = torch.nn.Sequential(torch.nn.Linear(128, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
truth = Truth(); deadline = time.time() + float(sys.argv[1]); step = 0
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in train:
        truth.mark("wait")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model")
        step += 1
        if step % 40 == 0:
            model.eval(); correct = 0
            with torch.no_grad():
                for vx, vy in val:
                    correct += int((model(vx).argmax(1) == vy).sum())
            model.train()
            truth.mark("loop_post")  # validation: the loop's own work after the step (the truth's convention)
        truth.next_step()
        if time.time() > deadline: break
truth.report()
