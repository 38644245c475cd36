"""The optimizer offloaded to the CPU by hand (to save GPU memory): forward and backward on the GPU, each
gradient copied to a CPU master copy, AdamW steps the CPU parameters, and they are copied back. The GPU
waits for the host's optimizer step and the parameter copies. Truth: wait, copy (the batch and the
parameter copies both ways), model (forward, backward, and the CPU optimizer step)."""
import sys, time, torch
from torch.utils.data import DataLoader, TensorDataset
from common import Truth
gpu = torch.cuda.is_available(); dev = torch.device("cuda" if gpu else "cpu")
data = TensorDataset(torch.randn(16384, 512), torch.randint(0, 10, (16384,)))
loader = DataLoader(data, batch_size=256, shuffle=True, num_workers=2, pin_memory=gpu, persistent_workers=True)
w = 2048 if gpu else 512
model = torch.nn.Sequential(torch.nn.Linear(512, w), torch.nn.ReLU(), torch.nn.Linear(w, w), torch.nn.ReLU(),
                            torch.nn.Linear(w, 10)).to(dev)
master = [p.detach().to("cpu", copy=True).requires_grad_(True) for p in model.parameters()]
opt = torch.optim.AdamW(master, lr=1e-4)
truth = Truth(); deadline = time.time() + float(sys.argv[1]); step = 0
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        truth.mark("copy")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        model.zero_grad(set_to_none=True); loss.backward()
        truth.mark("model")
        for p, m in zip(model.parameters(), master):
            m.grad = p.grad.to("cpu")
        truth.mark("copy")
        opt.step()
        truth.mark("model")
        with torch.no_grad():
            for p, m in zip(model.parameters(), master):
                p.copy_(m)
        truth.mark("copy"); truth.next_step(); step += 1
        if time.time() > deadline: break
truth.report()
