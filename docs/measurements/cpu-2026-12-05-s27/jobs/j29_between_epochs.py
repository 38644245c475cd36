"""Each epoch (about 1 s of training, fed by 2 workers) is followed by 1.5 s outside the loop: an
evaluation and a checkpoint upload written as a plain function call (a sleep here). Most of the wall is
between epochs, where no step runs."""
import time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth
ds = TensorDataset(torch.randn(64 * 40, 256), torch.randint(0, 10, (64 * 40,)))
loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=2, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Linear(256, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
def evaluate_and_upload():
    time.sleep(1.5)
truth = Truth(warm=0); deadline = time.time() + float(sys.argv[1]); began = time.perf_counter()
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model"); truth.next_step()
    t0 = time.perf_counter(); evaluate_and_upload(); truth.parts["loop_post"] += time.perf_counter() - t0
truth.report(wall=time.perf_counter() - began)
