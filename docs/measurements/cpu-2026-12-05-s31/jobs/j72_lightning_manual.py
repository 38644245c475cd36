"""A Lightning Trainer with manual optimization (automatic_optimization=False: training_step calls
manual_backward and opt.step itself), its Dataset building each item in Python (~0.5 ms) with
num_workers=0: the main process loads. Truth: the batch's building (timed in the Dataset), the
training_step, and Lightning's own time between steps (as the loop's)."""
import sys, time, torch
import lightning as L
from torch.utils.data import DataLoader, Dataset
from common import Truth
truth = Truth()
class Slow(Dataset):
    def __len__(self): return 100000
    def __getitem__(self, i):
        t = time.perf_counter()
        while time.perf_counter() - t < 0.0005: pass
        truth.add("wait", time.perf_counter() - t)
        return torch.randn(256), i % 10
class M(L.LightningModule):
    def __init__(self):
        super().__init__(); self.automatic_optimization = False
        self.net = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10))
        self.t0 = None
    def training_step(self, batch, i):
        start = time.perf_counter()
        if self.t0 is not None and truth.step >= truth.warm:
            # Between two steps: the batch's building (booked as wait in the Dataset) and Lightning's own.
            truth.parts["loop_pre"] += start - self.t0
        opt = self.optimizers(); x, y = batch
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        opt.zero_grad(); self.manual_backward(loss); opt.step()
        truth.add("model", time.perf_counter() - start)
        truth.next_step(); self.t0 = time.perf_counter()
        if time.time() > deadline: self.trainer.should_stop = True
    def configure_optimizers(self): return torch.optim.SGD(self.parameters(), lr=1e-3)
deadline = time.time() + float(sys.argv[1])
tr = L.Trainer(max_epochs=100, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
tr.fit(M(), DataLoader(Slow(), batch_size=32))
# "loop_pre" above counted the Dataset's building too (it runs between two training_steps): take it out.
truth.parts["loop_pre"] = max(0.0, truth.parts["loop_pre"] - truth.parts["wait"])
truth.report()
