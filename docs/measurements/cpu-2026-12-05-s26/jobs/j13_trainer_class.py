"""A Trainer class: fit() loops over the loader, training_step() runs the model, log_metrics() keeps
per-sample Python statistics after every step (about the model step's cost)."""
import time, torch, sys
from torch.utils.data import TensorDataset, DataLoader
from common import Truth

class Trainer:
    def __init__(self):
        self.model = torch.nn.Sequential(torch.nn.Linear(128, 512), torch.nn.ReLU(), torch.nn.Linear(512, 50))
        self.opt = torch.optim.Adam(self.model.parameters())
        self.loader = DataLoader(TensorDataset(torch.randn(8192, 128), torch.randint(0, 50, (8192,))), batch_size=64, shuffle=True)
        self.hist = {}
        self.truth = Truth()
    def training_step(self, x, y):
        out = self.model(x)
        loss = torch.nn.functional.cross_entropy(out, y)
        self.opt.zero_grad(); loss.backward(); self.opt.step()
        return out
    def log_metrics(self, out, y):
        preds = out.argmax(1).tolist()
        for p, t in zip(preds, y.tolist()):
            key = (p, t)
            self.hist[key] = self.hist.get(key, 0) + 1
        for _ in range(3):
            _ = sorted(self.hist.items(), key=lambda kv: -kv[1])[:10]
    def fit(self, seconds):
        deadline = time.time() + seconds
        while time.time() < deadline:
            self.truth.t = time.perf_counter()
            for x, y in self.loader:
                self.truth.mark("wait")
                out = self.training_step(x, y)
                self.truth.mark("model")
                self.log_metrics(out, y)
                self.truth.mark("loop_post")
                self.truth.next_step()
                if time.time() > deadline: break
        self.truth.report()

Trainer().fit(float(sys.argv[1]))
