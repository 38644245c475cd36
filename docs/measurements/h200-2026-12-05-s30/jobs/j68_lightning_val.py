"""A Lightning Trainer job validating every 50 training batches (val_check_interval=50) over a validation
loader with 2 workers that start at each validation (not persistent), training from a loader with 4
persistent workers; a conv net on in-memory images. Truth: callbacks' host clock, synchronised: model =
on_train_batch_start..end, validation = on_validation_start..end (the loop's work after the step), wait =
the rest between one training batch's end and the next's start (fetching and moving the next batch)."""
import sys, time, warnings
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from common import Truth
warnings.filterwarnings("ignore")
gpu = torch.cuda.is_available()
size, width = (64, 128) if gpu else (32, 16)
truth = Truth(); deadline = time.time() + float(sys.argv[1]); val = [0, 0.0, 0.0]
class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.ReLU(), nn.Conv2d(width, width, 3, padding=1),
                                 nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, 10))
    def training_step(self, b, i):
        return F.cross_entropy(self.net(b[0]), b[1])
    def validation_step(self, b, i):
        self.log("val_loss", F.cross_entropy(self.net(b[0]), b[1]))
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01, momentum=0.9)
class Clock(L.Callback):
    def on_train_batch_start(self, tr, m, b, i):
        truth.mark("wait")
    def on_train_batch_end(self, tr, m, o, b, i):
        truth.mark("model"); truth.next_step()
        if time.time() > deadline: tr.should_stop = True
    def on_validation_start(self, tr, m):
        if truth.cuda: torch.cuda.synchronize()
        val[2] = time.perf_counter()
    def on_validation_end(self, tr, m):
        if truth.cuda: torch.cuda.synchronize()
        took = time.perf_counter() - val[2]; val[0] += 1; val[1] += took
        truth.add("loop_post", took); truth.t += took
def images(n, seed):
    g = torch.Generator().manual_seed(seed)
    return TensorDataset(torch.randn(n, 3, size, size, generator=g), torch.randint(0, 10, (n,), generator=g))
train = DataLoader(images(8192, 0), batch_size=64, shuffle=True, num_workers=4, persistent_workers=True, pin_memory=gpu)
valid = DataLoader(images(1280, 1), batch_size=64, num_workers=2)
trainer = L.Trainer(accelerator="gpu" if gpu else "cpu", devices=1, max_epochs=1000, val_check_interval=50,
                    limit_val_batches=20, num_sanity_val_steps=0, logger=False, enable_checkpointing=False,
                    enable_progress_bar=False, enable_model_summary=False, callbacks=[Clock()])
trainer.fit(Net(), train, valid)
print(f"result trained={trainer.global_step} validations={val[0]} val_s={val[1]:.1f}", flush=True)
truth.report(trained=trainer.global_step, validations=val[0])
