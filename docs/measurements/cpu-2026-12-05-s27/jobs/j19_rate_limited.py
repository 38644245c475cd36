"""Each step waits 8 ms for a remote service (a sleep: a metrics push, a parameter fetch) after the
optimizer step; 2 workers feed a mid-size MLP. The loop's own wait, not the data's, not the model's."""
import time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth
ds = TensorDataset(torch.randn(8192, 256), torch.randint(0, 10, (8192,)))
loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=2, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
def push_metrics(loss):
    time.sleep(0.008)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model")
        push_metrics(float(loss))
        truth.mark("loop_post"); truth.next_step()
        if time.time() > deadline: break
truth.report()
