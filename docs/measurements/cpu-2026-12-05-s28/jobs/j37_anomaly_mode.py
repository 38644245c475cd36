"""torch.autograd.set_detect_anomaly(True) left on from a debugging session (ANOMALY=0 turns it off):
a mid-size MLP fed by 2 workers from memory. Each op records its Python stack; backward checks for NaN."""
import os, time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth
torch.autograd.set_detect_anomaly(os.environ.get("ANOMALY", "1") == "1")
ds = TensorDataset(torch.randn(8192, 256), torch.randint(0, 10, (8192,)))
loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=2, persistent_workers=True)
layers = []
for _ in range(8): layers += [torch.nn.Linear(256, 256), torch.nn.LayerNorm(256), torch.nn.GELU()]
model = torch.nn.Sequential(*layers, torch.nn.Linear(256, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model"); truth.next_step()
        if time.time() > deadline: break
truth.report(anomaly=torch.is_anomaly_enabled())
