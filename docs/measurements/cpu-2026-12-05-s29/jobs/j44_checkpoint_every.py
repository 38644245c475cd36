"""A checkpoint every 25 steps (torch.save of the model and optimizer state, ~40 MB, to local disk), as many
scripts do "to be safe"; num_workers=2 feeds an MLP from memory."""
import os, tempfile, time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth
ds = TensorDataset(torch.randn(8192, 512), torch.randint(0, 10, (8192,)))
loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=2, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-4)
path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
truth = Truth(); deadline = time.time() + float(sys.argv[1]); step = 0
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model")
        step += 1
        if step % 25 == 0:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, path)
        truth.mark("loop_post"); truth.next_step()
        if time.time() > deadline: break
truth.report()
