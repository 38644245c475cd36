"""A loop throttled by hand on a shared box: time.sleep(0.02) after each optimizer step ("be nice to the
other users"); 2 workers, an MLP that takes ~10 ms a step."""
import time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth
ds = TensorDataset(torch.randn(8192, 512), torch.randint(0, 10, (8192,)))
loader = DataLoader(ds, batch_size=128, shuffle=True, num_workers=2, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model")
        time.sleep(0.02)
        truth.mark("loop_post"); truth.next_step()
        if time.time() > deadline: break
truth.report()
