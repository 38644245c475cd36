"""Gradient clipping with a skip on a non-finite norm (`if torch.isfinite(norm)`: a sync every step, then
the optimizer step), loss logged with .item() every 10 steps, 4 workers keeping up. On a GPU the host
waits in the norm's check for the backward (GPU compute, not a removable sync). Truth: wait, copy, model
(forward, backward, the clip, the step), sync (the isfinite check), loop_post (logging)."""
import sys, time, torch
from torch.utils.data import DataLoader, TensorDataset
from common import Truth
gpu = torch.cuda.is_available(); dev = torch.device("cuda" if gpu else "cpu")
data = TensorDataset(torch.randn(16384, 1024), torch.randint(0, 10, (16384,)))
loader = DataLoader(data, batch_size=256 if gpu else 64, shuffle=True, num_workers=4, pin_memory=gpu, persistent_workers=True)
w = 4096 if gpu else 1024
model = torch.nn.Sequential(torch.nn.Linear(1024, w), torch.nn.ReLU(), torch.nn.Linear(w, w), torch.nn.ReLU(),
                            torch.nn.Linear(w, 10)).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
truth = Truth(); deadline = time.time() + float(sys.argv[1]); step = 0; log = []
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        truth.mark("copy")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        truth.mark("model")
        finite = bool(torch.isfinite(norm))
        truth.mark("sync")
        if finite: opt.step()
        truth.mark("model")
        step += 1
        if step % 10 == 0: log.append(loss.item())
        truth.mark("loop_post"); truth.next_step()
        if time.time() > deadline: break
truth.report()
