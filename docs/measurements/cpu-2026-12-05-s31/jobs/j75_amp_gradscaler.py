"""fp16 autocast with torch.amp.GradScaler, a conv net on 64x64 images fed by 4 workers (pinned,
non_blocking): the most common mixed-precision loop. GradScaler.step() reads found_inf with .item()
before the optimizer step, a sync inside the step every step; the host waits there for the backward's
kernels (GPU compute, not a sync the loop could drop). Truth: wait, copy, the model step (forward,
scaled backward, scaler.step, update), each phase synchronised. On a CPU the scaler is off (no fp16
autocast there): the same loop in float32."""
import sys, time, torch
from torch.utils.data import DataLoader, TensorDataset
from common import Truth
gpu = torch.cuda.is_available(); dev = torch.device("cuda" if gpu else "cpu")
n = 4096 if gpu else 512
data = TensorDataset(torch.randn(n, 3, 64, 64), torch.randint(0, 100, (n,)))
loader = DataLoader(data, batch_size=128 if gpu else 32, shuffle=True, num_workers=4, pin_memory=gpu,
                    persistent_workers=True)
width = 256 if gpu else 32
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, width, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(width, width, 3, padding=1),
    torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(width, 100)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
scaler = torch.amp.GradScaler(dev.type, enabled=gpu)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        truth.mark("copy")
        with torch.autocast(dev.type, dtype=torch.float16, enabled=gpu):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt); scaler.update()
        truth.mark("model"); truth.next_step()
        if time.time() > deadline: break
truth.report()
