"""tqdm-like wrapper over the loader, gradient clipping, a per-step LR scheduler and an EMA copy of the
weights updated parameter by parameter after every optimizer step (a wide MLP: the EMA is ~the model's cost)."""
import time, torch, sys, copy
from torch.utils.data import TensorDataset, DataLoader
from common import Truth

def progress(iterable):  # a stand-in for tqdm: a generator around the loader
    for i, item in enumerate(iterable):
        if i % 50 == 0:
            print(f"step {i}", file=sys.stderr)
        yield item

model = torch.nn.Sequential(*[torch.nn.Linear(512, 512) for _ in range(6)])
ema = copy.deepcopy(model)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
sched = torch.optim.lr_scheduler.StepLR(opt, 100)
loader = DataLoader(TensorDataset(torch.randn(4096, 512)), batch_size=16, shuffle=True, num_workers=1, persistent_workers=True)

def update_ema(decay=0.999):
    with torch.no_grad():
        for pe, p in zip(ema.parameters(), model.parameters()):
            pe.mul_(decay).add_(p, alpha=1 - decay)
        for _ in range(4):
            for pe, p in zip(ema.parameters(), model.parameters()):
                pe.lerp_(p, 0.0)

truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for (x,) in progress(loader):
        truth.mark("wait")
        loss = model(x).pow(2).mean()
        opt.zero_grad(); loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(); sched.step()
        truth.mark("model")
        update_ema()
        truth.mark("loop_post")
        truth.next_step()
        if time.time() > deadline: break
truth.report()
