"""Manual iterator (while True: next(it)), gradient accumulation 4, 2 workers, compute-heavy MLP."""
import time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth
torch.manual_seed(0)
ds = TensorDataset(torch.randn(8192, 512), torch.randint(0, 10, (8192,)))
loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=2)
model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
truth = Truth(); deadline = time.time() + float(sys.argv[1]); it = iter(loader); step = 0
truth.t = time.perf_counter()
while time.time() < deadline:
    try:
        x, y = next(it)
    except StopIteration:
        it = iter(loader); x, y = next(it)
    truth.mark("wait")
    loss = torch.nn.functional.cross_entropy(model(x), y) / 4
    loss.backward()
    step += 1
    if step % 4 == 0:
        opt.step(); opt.zero_grad()
    truth.mark("model")
    truth.next_step()
truth.report()
