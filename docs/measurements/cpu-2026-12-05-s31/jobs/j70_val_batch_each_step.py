"""One validation batch after each training step, from a persistent iterator over a validation loader
(`next(val_it)`, restarted at its end), evaluated under no_grad: a running validation loss, as some
loops track it. Truth: the training batch's wait, the training step, then the validation batch (its wait
and its forward) as the loop's work after the step."""
import sys, time, torch
from torch.utils.data import DataLoader, TensorDataset
from common import Truth
train = DataLoader(TensorDataset(torch.randn(20000, 256), torch.randint(0, 10, (20000,))), batch_size=64,
                   shuffle=True, num_workers=2, persistent_workers=True)
val = DataLoader(TensorDataset(torch.randn(2560, 256), torch.randint(0, 10, (2560,))), batch_size=256,
                 num_workers=1, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
truth = Truth(); deadline = time.time() + float(sys.argv[1]); val_it = iter(val); running = 0.0
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in train:
        truth.mark("wait")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model")
        try:
            vx, vy = next(val_it)
        except StopIteration:
            val_it = iter(val); vx, vy = next(val_it)
        with torch.no_grad():
            running = 0.9 * running + 0.1 * torch.nn.functional.cross_entropy(model(vx), vy).item()
        truth.mark("loop_post"); truth.next_step()
        if time.time() > deadline: break
truth.report()
