"""A plain loop under Hugging Face Accelerate (no Trainer): accelerator.prepare wraps the DataLoader
(DataLoaderShard fetches one batch ahead) and the optimizer; accelerator.backward. Each item costs
~0.4 ms of Python in 2 workers (64 per batch: ~13 ms a batch per worker pair), the model ~4 ms: starved.
ACCUM=N runs accelerator.accumulate(model) with gradient_accumulation_steps=N (the wrapped optimizer
steps once in N). Truth: the wait in the for statement, the model step (forward, backward, step)."""
import os, sys, time, torch
from torch.utils.data import DataLoader, Dataset
from accelerate import Accelerator
from common import Truth
class Slow(Dataset):
    def __len__(self): return 40000
    def __getitem__(self, i):
        t = time.perf_counter()
        while time.perf_counter() - t < 0.0004: pass
        return torch.randn(512), i % 10
accum = int(os.environ.get("ACCUM", "1"))
acc = Accelerator(cpu=True, gradient_accumulation_steps=accum)
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
loader = DataLoader(Slow(), batch_size=64, shuffle=True, num_workers=2, persistent_workers=True)
model, opt, loader = acc.prepare(model, opt, loader)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        with acc.accumulate(model):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            acc.backward(loss); opt.step(); opt.zero_grad()
        truth.mark("model"); truth.next_step()
        if time.time() > deadline: break
truth.report()
