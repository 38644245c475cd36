"""Small CNN-ish regression job that checkpoints model+optimizer with torch.save every 5 steps."""
import os, torch, torch.nn as nn
from torch.utils.data import TensorDataset, DataLoader
from truth import Truth, pc

torch.manual_seed(0)
X = torch.randn(4000, 3, 32, 32); Y = X.mean((1, 2, 3), keepdim=False).unsqueeze(1) * 3
loader = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True, num_workers=0)
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Flatten(), nn.Linear(32 * 8 * 8, 2048), nn.ReLU(), nn.Linear(2048, 1024), nn.ReLU(),
                      nn.Linear(1024, 1))
opt = torch.optim.AdamW(model.parameters(), 1e-3); lossf = nn.MSELoss()
CK = "/tmp/trial/ckpt/job3.pt"; os.makedirs(os.path.dirname(CK), exist_ok=True)
truth = Truth(); step = 0
for ep in range(2):
    t0 = pc(); it = iter(loader); tot = 0.0; n = 0
    while True:
        try: x, y = next(it)
        except StopIteration: break
        t1 = pc(); x, y = x.to("cpu"), y.to("cpu"); t2 = pc()
        loss = lossf(model(x), y); opt.zero_grad(); loss.backward(); opt.step()
        t3 = pc()
        step += 1; tot += loss.item(); n += 1
        if step % 5 == 0:
            torch.save({"step": step, "model": model.state_dict(), "opt": opt.state_dict()}, CK + ".tmp")
            os.replace(CK + ".tmp", CK)
        t4 = pc(); truth.add(t0, t1, t2, t3, t4); t0 = pc()
    print(f"epoch {ep} mean loss {tot/n:.5f} ckpt step {torch.load(CK)['step']}")
print(f"checkpoint size {os.path.getsize(CK)/1e6:.1f} MB")
truth.report()
