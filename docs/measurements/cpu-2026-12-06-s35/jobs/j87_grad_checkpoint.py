"""Activation checkpointing (torch.utils.checkpoint, non-reentrant) over a residual MLP's blocks: each block's
forward runs again inside backward. Two persistent workers keep up; loss logged with .item() every step.
Truth: wait, copy, model (forward, the recomputing backward, the step), sync (.item()), loop_post."""
import sys, time, torch
from torch import nn
from torch.utils.checkpoint import checkpoint
from torch.utils.data import DataLoader, TensorDataset
from common import Truth
gpu = torch.cuda.is_available(); dev = torch.device("cuda" if gpu else "cpu")
w = 2048 if gpu else 512
class Block(nn.Module):
    def __init__(self):
        super().__init__(); self.a = nn.Linear(w, w); self.b = nn.Linear(w, w); self.n = nn.LayerNorm(w)
    def forward(self, x):
        return x + self.b(torch.relu(self.a(self.n(x))))
class Net(nn.Module):
    def __init__(self):
        super().__init__(); self.inp = nn.Linear(256, w); self.blocks = nn.ModuleList(Block() for _ in range(4)); self.out = nn.Linear(w, 10)
    def forward(self, x):
        x = self.inp(x)
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False)
        return self.out(x)
data = TensorDataset(torch.randn(8192, 256), torch.randint(0, 10, (8192,)))
loader = DataLoader(data, batch_size=128, shuffle=True, num_workers=2, pin_memory=gpu, persistent_workers=True)
model = Net().to(dev); opt = torch.optim.Adam(model.parameters(), lr=1e-4)
truth = Truth(); deadline = time.time() + float(sys.argv[1]); losses = []
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        truth.mark("copy")
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
        truth.mark("model")
        losses.append(loss.item())
        truth.mark("sync")
        truth.next_step()
        if time.time() > deadline: break
truth.report()
