"""An EMA copy of the weights updated after each optimizer step by a Python loop over 60 parameter tensors
(as in many self-supervised and diffusion scripts); batches from memory, num_workers=0."""
import copy, time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth
ds = TensorDataset(torch.randn(8192, 128), torch.randint(0, 10, (8192,)))
loader = DataLoader(ds, batch_size=128, shuffle=True)
layers = []
for _ in range(30): layers += [torch.nn.Linear(128, 128), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers, torch.nn.Linear(128, 10))
ema = copy.deepcopy(model).requires_grad_(False)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model")
        with torch.no_grad():
            for pe, p in zip(ema.parameters(), model.parameters()):
                pe.mul_(0.999).add_(p, alpha=0.001)
        truth.mark("loop_post"); truth.next_step()
        if time.time() > deadline: break
truth.report()
