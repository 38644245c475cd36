"""Validation at the top of the loop body, before the step's model (`if step % 40 == 0: evaluate()`, so
the first step validates the initial model), over a loader with 2 persistent workers; training fed by 2
persistent workers. Truth books each pass (its waits and its forward) as the loop's own work."""
import sys, time, torch
from torch.utils.data import DataLoader, TensorDataset
from common import Truth
train = DataLoader(TensorDataset(torch.randn(20000, 256), torch.randint(0, 10, (20000,))), batch_size=64,
                   shuffle=True, num_workers=2, persistent_workers=True)
val = DataLoader(TensorDataset(torch.randn(5120, 256), torch.randint(0, 10, (5120,))), batch_size=256,
                 num_workers=2, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

def evaluate():
    model.eval(); correct = 0
    with torch.no_grad():
        for vx, vy in val:
            correct += (model(vx).argmax(1) == vy).sum().item()
    model.train()
    return correct

truth = Truth(); deadline = time.time() + float(sys.argv[1]); step = 0
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in train:
        truth.mark("wait")
        if step % 40 == 0:
            evaluate()
        truth.mark("loop_pre")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model"); truth.next_step(); step += 1
        if time.time() > deadline: break
truth.report()
