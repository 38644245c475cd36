"""A small dataset held on the device, no DataLoader (the "whole CIFAR on the GPU" style): each epoch a
randperm on the device, each step a slice of it indexes the resident tensors, a 4-layer MLP, the loss
read with .item() every 50 steps. Nothing to load or copy: the model's step is the job. Truth: loop_pre
(the indexing), model, sync (the .item() every 50 steps)."""
import sys, time, torch
from common import Truth
gpu = torch.cuda.is_available(); dev = torch.device("cuda" if gpu else "cpu")
n, b = 50000, 512
X, Y = torch.randn(n, 3072, device=dev), torch.randint(0, 10, (n,), device=dev)
w = 2048 if gpu else 256
model = torch.nn.Sequential(torch.nn.Linear(3072, w), torch.nn.ReLU(), torch.nn.Linear(w, w), torch.nn.ReLU(),
                            torch.nn.Linear(w, w), torch.nn.ReLU(), torch.nn.Linear(w, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True)
truth = Truth(); deadline = time.time() + float(sys.argv[1]); step = 0; log = []
while time.time() < deadline:
    perm = torch.randperm(n, device=dev)
    truth.t = time.perf_counter()
    for i in range(0, n - b + 1, b):
        idx = perm[i:i + b]
        x, y = X[idx], Y[idx]
        truth.mark("loop_pre")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
        truth.mark("model")
        step += 1
        if step % 50 == 0: log.append(loss.item())
        truth.mark("sync"); truth.next_step()
        if time.time() > deadline: break
truth.report()
