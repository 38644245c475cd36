"""Each step fetches a side input (a lookup table shard) with ~6 ms of storage latency in the loop body, then a mid-size model."""
import time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth
ds = TensorDataset(torch.randn(8192, 256), torch.randint(0, 10, (8192,)))
loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=1, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Linear(256 + 16, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
def fetch_shard(i):
    time.sleep(0.006)  # object-store GET
    return torch.full((64, 16), float(i % 5))
truth = Truth(); deadline = time.time() + float(sys.argv[1]); i = 0
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        side = fetch_shard(i); i += 1
        x = torch.cat([x, side], 1)
        truth.mark("loop_pre")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model")
        truth.next_step()
        if time.time() > deadline: break
truth.report()
