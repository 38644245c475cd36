"""Compute-light step with a checkpoint (torch.save of model + optimizer to disk) every 10 steps and a log line every step."""
import time, torch, sys, os, tempfile
from torch.utils.data import TensorDataset, DataLoader
from common import Truth
ds = TensorDataset(torch.randn(4096, 256), torch.randn(4096, 1))
loader = DataLoader(ds, batch_size=128, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1), torch.nn.Linear(1, 1))
big = torch.nn.Linear(4096, 4096)  # carried in the checkpoint (an EMA copy, say)
opt = torch.optim.Adam(model.parameters())
d = tempfile.mkdtemp(); truth = Truth(); deadline = time.time() + float(sys.argv[1]); step = 0
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model")
        value = loss.item()
        truth.mark("sync")
        step += 1
        if step % 10 == 0:
            torch.save({"model": model.state_dict(), "ema": big.state_dict(), "opt": opt.state_dict()}, os.path.join(d, "ckpt.pt"))
        print(f"step {step} loss {value:.4f}", file=sys.stderr if step % 100 else sys.stdout)
        truth.mark("loop_post")
        truth.next_step()
        if time.time() > deadline: break
truth.report()
