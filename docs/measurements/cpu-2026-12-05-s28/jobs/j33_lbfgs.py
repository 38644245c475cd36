"""A physics-informed-style fit: full batch in memory, no DataLoader, LBFGS with a closure (up to
20 forward/backward passes inside each optimizer step)."""
import time, torch, sys
from common import Truth
x = torch.rand(4096, 2); y = torch.sin(3 * x[:, :1]) * torch.cos(2 * x[:, 1:])
model = torch.nn.Sequential(torch.nn.Linear(2, 128), torch.nn.Tanh(), torch.nn.Linear(128, 128), torch.nn.Tanh(), torch.nn.Linear(128, 1))
opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=20, history_size=10)
def closure():
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    return loss
truth = Truth(); deadline = time.time() + float(sys.argv[1])
truth.t = time.perf_counter()
while time.time() < deadline:
    loss = opt.step(closure)
    truth.mark("model"); truth.next_step()
truth.report()
