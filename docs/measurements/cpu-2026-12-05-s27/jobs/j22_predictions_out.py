"""Training that also writes each batch's predictions as CSV lines to a file (flushed every step) and
keeps a Python list of per-sample losses: the loop's own I/O after the step."""
import os, tempfile, time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth
ds = TensorDataset(torch.randn(16384, 128), torch.randint(0, 10, (16384,)))
loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=2, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Linear(128, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
out = open(os.path.join(tempfile.mkdtemp(), "preds.csv"), "w"); history = []
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        logits = model(x)
        losses = torch.nn.functional.cross_entropy(logits, y, reduction="none")
        loss = losses.mean(); opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model")
        probs = logits.detach().softmax(1).tolist()
        for row, target in zip(probs, y.tolist()):
            out.write(",".join(f"{p:.5f}" for p in row) + f",{target}\n")
        out.flush(); os.fsync(out.fileno())
        history.extend(losses.detach().tolist())
        truth.mark("loop_post"); truth.next_step()
        if time.time() > deadline: break
truth.report()
