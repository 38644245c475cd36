"""Well-fed compute-heavy job: wide MLP on a small in-memory dataset."""
import torch, torch.nn as nn
from torch.utils.data import TensorDataset, DataLoader
from truth import Truth, pc

torch.manual_seed(0)
X = torch.randn(8192, 512); Y = torch.randint(0, 100, (8192,))
loader = DataLoader(TensorDataset(X, Y), batch_size=256, shuffle=True, num_workers=0)
model = nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(),
                      nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 100))
opt = torch.optim.SGD(model.parameters(), 0.01, momentum=0.9); lossf = nn.CrossEntropyLoss()
truth = Truth()
for ep in range(5):
    t0 = pc(); it = iter(loader); tot = 0.0; n = 0
    while True:
        try: x, y = next(it)
        except StopIteration: break
        t1 = pc(); x, y = x.to("cpu"), y.to("cpu"); t2 = pc()
        loss = lossf(model(x), y); opt.zero_grad(); loss.backward(); opt.step()
        t3 = pc()
        tot += loss.detach(); n += 1
        t4 = pc(); truth.add(t0, t1, t2, t3, t4); t0 = pc()
    print(f"epoch {ep} mean loss {float(tot)/n:.4f}")
truth.report()
