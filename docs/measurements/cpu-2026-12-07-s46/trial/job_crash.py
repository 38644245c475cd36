"""Training that hits a bad batch mid-run and raises."""
import torch, torch.nn as nn
from torch.utils.data import TensorDataset, DataLoader
torch.manual_seed(0)
X = torch.randn(8192, 32); Y = (X.sum(1) > 0).long()
loader = DataLoader(TensorDataset(X, Y), batch_size=64, shuffle=True, num_workers=2, persistent_workers=True)
model = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 2)); opt = torch.optim.SGD(model.parameters(), lr=0.1)
step = 0
def check(loss, step):
    if step == 300:
        raise FloatingPointError(f"loss became nan at step {step}")
for ep in range(10):
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y); opt.zero_grad(); loss.backward(); opt.step()
        step += 1; check(loss, step)
        if step % 100 == 0: print(f"step {step} loss {loss.item():.4f}", flush=True)
