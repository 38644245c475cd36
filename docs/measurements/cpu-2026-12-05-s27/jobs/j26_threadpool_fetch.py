"""No DataLoader: batches fetched from a (simulated) object store by a ThreadPoolExecutor, 8 requests in
flight, 20 ms of latency each; the loop takes each future's result() in order, then trains a small MLP."""
import collections, concurrent.futures, time, torch, sys
from common import Truth
def fetch(index):
    time.sleep(0.02)  # a GET's latency
    g = torch.Generator().manual_seed(index)
    return torch.randn(64, 128, generator=g), torch.randint(0, 10, (64,), generator=g)
model = torch.nn.Sequential(torch.nn.Linear(128, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
pool = concurrent.futures.ThreadPoolExecutor(4)
pending = collections.deque(pool.submit(fetch, i) for i in range(8))
truth = Truth(); deadline = time.time() + float(sys.argv[1]); step = 8
truth.t = time.perf_counter()
while time.time() < deadline:
    x, y = pending.popleft().result()
    pending.append(pool.submit(fetch, step)); step += 1
    truth.mark("wait")
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    truth.mark("model"); truth.next_step()
truth.report()
pool.shutdown(cancel_futures=True)
