"""Validation every 40 training steps inside the epoch, over a validation loader with 2 non-persistent
workers (20 batches, no_grad); training reads a loader with 2 persistent workers. Truth books the
validation as the loop's work after the step (it is neither the training batch's wait nor its model)."""
import time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth
train = DataLoader(TensorDataset(torch.randn(20000, 256), torch.randint(0, 10, (20000,))), batch_size=64,
                   shuffle=True, num_workers=2, persistent_workers=True)
val = DataLoader(TensorDataset(torch.randn(1280, 256), torch.randint(0, 10, (1280,))), batch_size=64, num_workers=2)
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
truth = Truth(); deadline = time.time() + float(sys.argv[1]); step = 0
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in train:
        truth.mark("wait")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model"); step += 1
        if step % 40 == 0:
            model.eval(); correct = 0
            with torch.no_grad():
                for vx, vy in val:
                    correct += (model(vx).argmax(1) == vy).sum().item()
            model.train()
        truth.mark("loop_post"); truth.next_step()
        if time.time() > deadline: break
truth.report()
