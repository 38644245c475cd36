"""Short training, then exits 3 (e.g. a quality gate failed)."""
import sys, time, torch, torch.nn as nn
from torch.utils.data import TensorDataset, DataLoader
torch.manual_seed(0)
X = torch.randn(8192, 32); Y = (X.sum(1) > 0).long()
loader = DataLoader(TensorDataset(X, Y), batch_size=64, shuffle=True, num_workers=2)
model = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 2)); opt = torch.optim.SGD(model.parameters(), lr=0.1)
for ep in range(3):
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y); opt.zero_grad(); loss.backward(); opt.step()
    print(f"epoch {ep} loss {loss.item():.4f}")
acc = (model(X).argmax(1) == Y).float().mean().item()
print(f"final acc {acc:.4f} below gate 0.999", file=sys.stderr)
sys.exit(3)
