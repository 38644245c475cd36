"""A metrics thread of the job's own summarises its history in Python, over and over (a smoothing pass
over 20k records, then 1 ms of rest), beside a training loop fed by 2 workers: the thread holds the GIL
most of the time, and the loop's Python runs only between its switches."""
import json, threading, time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth
history = [{"step": i, "loss": 0.1 * i, "lr": 1e-3, "tags": ["a", "b"]} for i in range(20_000)]
def flusher():
    while True:
        smoothed, level = [], 0.0
        for record in history:
            level = 0.9 * level + 0.1 * record["loss"]
            smoothed.append({"step": record["step"], "loss": round(level, 4)})
        time.sleep(0.001)
import os
if os.environ.get("NO_FLUSHER") != "1": threading.Thread(target=flusher, daemon=True, name="metrics").start()
ds = TensorDataset(torch.randn(8192, 256), torch.randint(0, 10, (8192,)))
loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=2, persistent_workers=True)
layers = []
for _ in range(6): layers += [torch.nn.Linear(256, 256), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers, torch.nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model"); truth.next_step()
        if time.time() > deadline: break
truth.report()
