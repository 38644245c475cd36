"""A fixed step budget over `itertools.cycle(loader)` (a common GAN and semi-supervised idiom): cycle keeps
every batch of the first epoch and replays them afterwards, so after one pass the DataLoader is never asked
again. 2 workers, a small MLP, Adam, loss logged with .item() every 20 steps. Truth: wait, copy, model,
sync, loop_post."""
import itertools, sys, time, torch
from torch.utils.data import DataLoader, TensorDataset
from common import Truth
gpu = torch.cuda.is_available(); dev = torch.device("cuda" if gpu else "cpu")
data = TensorDataset(torch.randn(2048, 512), torch.randint(0, 10, (2048,)))
loader = DataLoader(data, batch_size=64, shuffle=True, num_workers=2)
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
truth = Truth(); deadline = time.time() + float(sys.argv[1]); log = []
truth.t = time.perf_counter()
for step, (x, y) in zip(itertools.count(), itertools.cycle(loader)):
    truth.mark("wait")
    x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
    truth.mark("copy")
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    truth.mark("model")
    if step % 20 == 0:
        log.append(loss.item())
    truth.mark("sync"); truth.next_step()
    if time.time() > deadline:
        break
truth.report()
