# Novel job: a Lightning Trainer on the CPU. A small CNN on in-memory images that each __getitem__
# augments (random crop by roll + noise, ~1 ms a sample) in 2 workers; validation 4 times an epoch over a
# 1-worker loader; a ModelCheckpoint every 50 steps. Truth from the Trainer's own hooks: the share of wall
# time in training batches (batch start -> end), in validation, and the rest (fetching, Lightning's own).
import sys, time, json, tempfile
import torch, torch.nn as nn
import lightning as L
from torch.utils.data import DataLoader, Dataset

class Aug(Dataset):
    def __init__(self, n): self.x = torch.randn(n, 3, 32, 32); self.y = torch.randint(0, 10, (n,))
    def __len__(self): return len(self.x)
    def __getitem__(self, i):
        x = self.x[i]
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.001: pass   # a decode's worth of CPU
        x = torch.roll(x, shifts=(int(i) % 5, int(i) % 3), dims=(1, 2)) + 0.05 * torch.randn_like(x)
        return x, self.y[i]

class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1),
                                 nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
    def training_step(self, b, i):
        x, y = b; loss = nn.functional.cross_entropy(self.net(x), y); self.log("loss", loss); return loss
    def validation_step(self, b, i):
        x, y = b; self.log("val_loss", nn.functional.cross_entropy(self.net(x), y))
    def configure_optimizers(self): return torch.optim.Adam(self.parameters(), 1e-3)

class Truth(L.Callback):
    def __init__(self): self.t = {"batch": 0.0, "val": 0.0}; self.began = None
    def on_train_start(self, *a): self.start = time.perf_counter()
    def on_train_batch_start(self, *a): self.b = time.perf_counter()
    def on_train_batch_end(self, *a): self.t["batch"] += time.perf_counter() - self.b
    def on_validation_start(self, *a): self.v = time.perf_counter()
    def on_validation_end(self, *a): self.t["val"] += time.perf_counter() - self.v
    def on_train_end(self, *a):
        wall = time.perf_counter() - self.start
        print("TRUTH", json.dumps({"batch": round(self.t["batch"] / wall, 3), "val": round(self.t["val"] / wall, 3),
              "rest": round(1 - (self.t["batch"] + self.t["val"]) / wall, 3)}))

if __name__ == "__main__":
    torch.set_num_threads(1)
    train = DataLoader(Aug(6000), batch_size=32, shuffle=True, num_workers=2, persistent_workers=True)
    val = DataLoader(Aug(640), batch_size=64, num_workers=1)
    ck = L.pytorch.callbacks.ModelCheckpoint(dirpath=tempfile.mkdtemp(), every_n_train_steps=50)
    trainer = L.Trainer(max_time={"seconds": float(sys.argv[1])}, accelerator="cpu", devices=1,
                        val_check_interval=0.25, callbacks=[Truth(), ck], enable_progress_bar=False,
                        logger=False, num_sanity_val_steps=0)
    trainer.fit(Net(), train, val)
