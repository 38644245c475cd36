"""One batch split into 4 micro-batches inside the step: forward and backward each, a .item() of each
micro-batch's loss for the log, then one optimizer step. Fed by 2 workers with cheap items. Truth: the
wait, and the model step (all four forward/backward, the .item()s and the step)."""
import sys, time, torch
from torch.utils.data import DataLoader, TensorDataset
from common import Truth
loader = DataLoader(TensorDataset(torch.randn(8192, 512), torch.randint(0, 10, (8192,))), batch_size=256,
                    shuffle=True, num_workers=2, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
truth = Truth(); deadline = time.time() + float(sys.argv[1]); log = []
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        opt.zero_grad()
        for xs, ys in zip(x.chunk(4), y.chunk(4)):
            loss = torch.nn.functional.cross_entropy(model(xs), ys) / 4
            loss.backward(); log.append(loss.item())
        opt.step()
        truth.mark("model"); truth.next_step()
        if time.time() > deadline: break
truth.report()
