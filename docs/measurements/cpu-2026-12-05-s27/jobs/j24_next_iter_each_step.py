"""A common bug: `x, y = next(iter(loader))` inside the loop, so every step builds a new iterator and
starts the loader's 2 workers again (a tutorial's "grab a batch" line kept in training)."""
import time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth
ds = TensorDataset(torch.randn(8192, 128), torch.randint(0, 10, (8192,)))
loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=2)
model = torch.nn.Sequential(torch.nn.Linear(128, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
truth.t = time.perf_counter()
while time.time() < deadline:
    x, y = next(iter(loader))
    truth.mark("wait")
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    truth.mark("model"); truth.next_step()
truth.report()
