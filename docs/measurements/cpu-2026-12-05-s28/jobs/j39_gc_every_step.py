"""gc.collect() after every optimizer step (a memory-leak workaround left in), with ~0.5M Python objects
alive (a vocabulary and a cache of dicts): 2 workers feed a small MLP from memory."""
import gc, time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth
vocab = {f"token{i}": [i, str(i)] for i in range(100_000)}
cache = [{"id": i, "tags": [i, i + 1]} for i in range(60_000)]
ds = TensorDataset(torch.randn(8192, 128), torch.randint(0, 10, (8192,)))
loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=2, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Linear(128, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model")
        gc.collect()
        truth.mark("loop_post"); truth.next_step()
        if time.time() > deadline: break
truth.report()
