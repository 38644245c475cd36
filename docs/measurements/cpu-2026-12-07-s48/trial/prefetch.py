"""Hand-written background prefetcher: a producer thread 'reads' shards from a slow store
(blocking read, simulated with sleep) and decodes them with torch ops into batches on a
queue.Queue(maxsize=4); the training loop get()s batches. No DataLoader anywhere."""
import argparse, queue, sys, threading, time
import torch, torch.nn as nn
from truth import Truth

p = argparse.ArgumentParser(); p.add_argument("--truth", action="store_true"); p.add_argument("--steps", type=int, default=400)
args = p.parse_args()
torch.manual_seed(0)
B, F, C = 256, 512, 10
W = torch.randn(F, C)


def producer(q, n, stop):
    g = torch.Generator().manual_seed(1)
    for i in range(n):
        if stop.is_set():
            return
        time.sleep(0.070)                         # blocking read of a shard from network storage
        raw = torch.randint(0, 256, (B, F), generator=g, dtype=torch.uint8)
        x = (raw.float() / 255.0 - 0.5) / 0.25    # "decode" + normalise
        y = (x @ W).argmax(1)
        q.put((x, y))
    q.put(None)


q = queue.Queue(maxsize=4)
stop = threading.Event()
th = threading.Thread(target=producer, args=(q, args.steps, stop), daemon=True)
th.start()

model = nn.Sequential(nn.Linear(F, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, C))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
lossf = nn.CrossEntropyLoss()
T = Truth(enabled=args.truth)
step, correct, seen = 0, 0, 0
T.begin()
while True:
    item = q.get()
    T.mark("wait")
    if item is None:
        break
    x, y = item
    T.mark("pre")
    out = model(x)
    loss = lossf(out, y)
    opt.zero_grad(); loss.backward(); opt.step()
    T.mark("model")
    if step % 50 == 0:
        l = loss.item()
        T.mark("sync")
        print(f"step {step} loss {l:.4f}", flush=True)
    T.mark("post")
    T.end_step(); T.begin()
    step += 1
print(f"done: {step} steps, final loss {loss.item():.4f}")
T.report(windows=1)
