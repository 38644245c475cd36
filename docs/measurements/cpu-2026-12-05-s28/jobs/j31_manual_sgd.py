"""No torch.optim: SGD with momentum written by hand over 80 parameter tensors after backward()
(meta-learning and tutorial code does this). Batches from memory, num_workers=0. Truth books the
hand-written update as the model's step (it is the optimizer)."""
import time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth
ds = TensorDataset(torch.randn(8192, 64), torch.randint(0, 10, (8192,)))
loader = DataLoader(ds, batch_size=64, shuffle=True)
layers = []
for _ in range(40): layers += [torch.nn.Linear(64, 64), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers, torch.nn.Linear(64, 10))
bufs = [torch.zeros_like(p) for p in model.parameters()]
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        truth.mark("model")
        with torch.no_grad():
            for p, b in zip(model.parameters(), bufs):
                b.mul_(0.9).add_(p.grad)
                p.add_(b, alpha=-0.01)
                p.grad = None
        truth.mark("update (optimizer)"); truth.next_step()
        if time.time() > deadline: break
truth.report()
