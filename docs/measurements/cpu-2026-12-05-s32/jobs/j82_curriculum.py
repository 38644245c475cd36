"""A curriculum: for the first half of the run the Dataset serves plain crops (the model keeps up), then
switches to heavy augmentation (several blurs and a noise pass per sample) that 2 workers cannot keep up
with: compute-bound, then input-bound. The summary's spans should show the change and end input-bound.
Truth: wait, copy, model (the whole run; the first and second half printed apart)."""
import sys, time, torch
from torch.utils.data import DataLoader, Dataset
from common import Truth
gpu = torch.cuda.is_available(); dev = torch.device("cuda" if gpu else "cpu")
secs = float(sys.argv[1]); switch_at = time.time() + secs / 2
class Curriculum(Dataset):
    def __len__(self): return 10**6
    def __getitem__(self, i):
        x = torch.randn(3, 32, 32)
        if time.time() > switch_at:
            k = torch.ones(3, 1, 5, 5) / 25
            for _ in range(4): x = torch.nn.functional.conv2d(x[None], k, padding=2, groups=3)[0]
            x = x + 0.1 * torch.randn_like(x)
        return x, i % 10
loader = DataLoader(Curriculum(), batch_size=64, num_workers=2, pin_memory=gpu)
w = 256 if gpu else 48
model = torch.nn.Sequential(torch.nn.Conv2d(3, w, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(w, w, 3, padding=1),
                            torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(w, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
truth = Truth(); half = None; deadline = time.time() + secs
truth.t = time.perf_counter()
for x, y in loader:
    truth.mark("wait")
    x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
    truth.mark("copy")
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    truth.mark("model"); truth.next_step()
    if half is None and time.time() > switch_at:
        half = dict(truth.parts); print("first half", {k: round(v / max(1e-9, sum(half.values())), 3) for k, v in half.items()})
    if time.time() > deadline: break
second = {k: truth.parts[k] - (half or {}).get(k, 0) for k in truth.parts}
print("second half", {k: round(v / max(1e-9, sum(second.values())), 3) for k, v in second.items()})
truth.report()
