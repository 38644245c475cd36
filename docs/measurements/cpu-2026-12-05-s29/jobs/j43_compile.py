"""torch.compile on a CPU MLP fed by 2 workers: the first steps compile (seconds), then the compiled model
runs. Truth books compile time as the model's (it happens inside the first forward and backward)."""
import time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth
ds = TensorDataset(torch.randn(16384, 256), torch.randint(0, 10, (16384,)))
loader = DataLoader(ds, batch_size=128, shuffle=True, num_workers=2, persistent_workers=True)
model = torch.compile(torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 10)))
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
truth.report()
