"""Validation every 20 training steps over a fast loader (in-memory tensors, 2 persistent workers) whose
forward passes cost more than the 20 training steps between them: a plain loop, an evaluate() of the
job's own under no_grad. Truth books each pass (its waits and its forward) as the loop's work after the
step."""
import sys, time, torch
from torch.utils.data import DataLoader, TensorDataset
from common import Truth
train = DataLoader(TensorDataset(torch.randn(20000, 256), torch.randint(0, 10, (20000,))), batch_size=64,
                   shuffle=True, num_workers=2, persistent_workers=True)
val = DataLoader(TensorDataset(torch.randn(12800, 256), torch.randint(0, 10, (12800,))), batch_size=256,
                 num_workers=2, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                            torch.nn.ReLU(), torch.nn.Linear(1024, 10))
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
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model"); step += 1
        if step % 20 == 0:
            evaluate()
        truth.mark("loop_post"); truth.next_step()
        if time.time() > deadline: break
truth.report()
