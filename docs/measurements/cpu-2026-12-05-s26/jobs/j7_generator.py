"""No DataLoader: batches built by a Python generator (parse + augment per sample), then a small MLP."""
import time, torch, sys, random, json
from common import Truth
random.seed(0)
rows = [json.dumps({"f": [random.random() for _ in range(128)], "y": random.randrange(10)}) for _ in range(2000)]
def batches(bs=32):
    while True:
        xs, ys = [], []
        for _ in range(bs):
            r = json.loads(random.choice(rows))
            f = [v * 2 - 1 for v in r["f"]]
            if random.random() < 0.5: f = f[::-1]
            xs.append(f); ys.append(r["y"])
        yield torch.tensor(xs), torch.tensor(ys)
model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
opt = torch.optim.Adam(model.parameters())
truth = Truth(); deadline = time.time() + float(sys.argv[1])
truth.t = time.perf_counter()
for x, y in batches():
    truth.mark("loop_pre")
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    truth.mark("model")
    truth.next_step()
    if time.time() > deadline: break
truth.report()
