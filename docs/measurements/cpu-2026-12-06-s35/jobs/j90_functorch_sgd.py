"""Training written with torch.func: per-sample gradients (vmap over grad of a functional_call), clipped
per sample and averaged (DP-SGD style), then a hand-written SGD update under no_grad: no loss.backward(), no
torch.optim optimizer. Batches from a DataLoader with 2 workers. Truth: wait, copy, model (the per-sample
gradients and the update), loop_post."""
import sys, time, torch
from torch.func import functional_call, grad, vmap
from torch.utils.data import DataLoader, TensorDataset
from common import Truth
gpu = torch.cuda.is_available(); dev = torch.device("cuda" if gpu else "cpu")
data = TensorDataset(torch.randn(4096, 128), torch.randint(0, 10, (4096,)))
loader = DataLoader(data, batch_size=64, shuffle=True, num_workers=2, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.Tanh(), torch.nn.Linear(256, 10)).to(dev)
params = {k: v.detach() for k, v in model.named_parameters()}
def loss_of(p, x, y):
    out = functional_call(model, p, (x.unsqueeze(0),))
    return torch.nn.functional.cross_entropy(out, y.unsqueeze(0))
per_sample = vmap(grad(loss_of), in_dims=(None, 0, 0))
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        truth.mark("copy")
        grads = per_sample(params, x, y)
        norms = torch.sqrt(sum(g.flatten(1).pow(2).sum(1) for g in grads.values()))
        scale = (1.0 / torch.clamp(norms, min=1.0)).view(-1, 1)
        with torch.no_grad():
            for k in params:
                g = (grads[k].flatten(1) * scale).mean(0).view_as(params[k])
                params[k] = params[k] - 0.05 * g
        truth.mark("model"); truth.next_step()
        if time.time() > deadline: break
truth.report()
