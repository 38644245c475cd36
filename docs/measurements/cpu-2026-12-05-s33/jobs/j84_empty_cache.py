"""`torch.cuda.empty_cache()` after every step (a common "fix" for fragmentation): it waits for the GPU
and hands the cached blocks back, so the next step's forward pays cudaMalloc again. 4 workers keep up.
Truth: wait, copy, model (forward, backward, step), loop_post (the empty_cache call)."""
import sys, time, torch
from torch.utils.data import DataLoader, TensorDataset
from common import Truth
gpu = torch.cuda.is_available(); dev = torch.device("cuda" if gpu else "cpu")
data = TensorDataset(torch.randn(8192, 3, 64, 64), torch.randint(0, 10, (8192,)))
loader = DataLoader(data, batch_size=128 if gpu else 16, shuffle=True, num_workers=4, pin_memory=gpu, persistent_workers=True)
c = 128 if gpu else 16
model = torch.nn.Sequential(torch.nn.Conv2d(3, c, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(c, c, 3, padding=1),
                            torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(c, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
truth = Truth(); deadline = time.time() + float(sys.argv[1]); step = 0
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        truth.mark("copy")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
        truth.mark("model")
        del loss
        if gpu: torch.cuda.empty_cache()
        truth.mark("loop_post"); truth.next_step(); step += 1
        if time.time() > deadline: break
truth.report()
