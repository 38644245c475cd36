"""What each of `xfertop run`'s model marks costs a training step, by torch's own hook machinery: a tiny MLP
step on the CPU (forward, cross-entropy, backward, SGD), with one mark installed at a time, 3 rounds in
turn, the fastest of three passes of 3,000 steps. The marks are no-ops here (no step clock), so this is
the price of the mechanism: a module hook takes nn.Module's slow call path.

    python docs/measurements/cpu-2026-12-04-s21/model_hook_costs.py
"""
import os, sys, time, importlib
import torch
from torch import nn
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(8, 16); y = torch.randint(0, 4, (8,))
def one(steps=3000):
    best = []
    for _ in range(3):
        began = time.perf_counter_ns()
        for _ in range(steps):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        best.append((time.perf_counter_ns() - began) / steps)
    return min(best)
sp = importlib.import_module("xfertop.reporter._step_parts")
orig_backward = torch.Tensor.backward
def install(kind):
    undo = []
    if kind == "pre_hook":
        h = model.register_forward_pre_hook(lambda m, a: None); undo.append(h.remove)
    if kind == "post_hook":
        h = model.register_forward_hook(lambda m, a, o: None); undo.append(h.remove)
    if kind == "opt_hook":
        from torch.optim.optimizer import register_optimizer_step_post_hook
        h = register_optimizer_step_post_hook(lambda o, a, k: None); undo.append(h.remove)
    if kind == "backward":
        torch.Tensor.backward = lambda self, *a, **k: orig_backward(self, *a, **k)
        undo.append(lambda: setattr(torch.Tensor, "backward", orig_backward))
    if kind == "xfertop_pre":
        w = sp.ModelWatch(torch); w._settle(model); w._watched[1].remove()
        undo.append(w._watched[0].remove)
    return undo
kinds = ["plain", "pre_hook", "post_hook", "opt_hook", "backward", "xfertop_pre"]
res = {k: [] for k in kinds}
one()
for r in range(3):
    for k in kinds:
        undo = install(k)
        res[k].append(one())
        for u in undo: u()
for k, v in res.items():
    print(f"{k:12s} {min(v)/1000:7.2f} us/step ({(min(v)-min(res['plain']))/1000:+.2f})")
