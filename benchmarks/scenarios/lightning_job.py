"""(l) A Lightning Trainer job (only when ``lightning`` or ``pytorch_lightning`` imports; otherwise it prints
"skipped: ..." and exits 0). The model is built in code (an MLP classifier), the data live in memory,
and every sample pays 0.5 ms of storage latency in its ``__getitem__``; 2 DataLoader workers do not keep
up, so the job is input-bound.

The deadline and the --truth timings come from a Callback (Lightning runs the loop): data is the time
from one batch's ``on_train_batch_end`` to the next ``on_before_batch_transfer`` (Lightning fetches one
batch ahead, so this holds the loader wait), copy is the batch transfer, compute is
``on_train_batch_start`` to ``on_train_batch_end`` (forward, backward, optimizer step).

    python benchmarks/scenarios/lightning_job.py [--seconds 20] [--truth]
"""

from __future__ import annotations

import time
import warnings

import torch
from _common import Clock, parse_args, pick_device, seed_everything, skip
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset

try:
    import lightning as L
except ImportError:
    try:
        import pytorch_lightning as L
    except ImportError:
        L = None


class SlowRecords(Dataset):
    def __init__(self, count: int, features: int) -> None:
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(count, features, generator=g)
        self.y = torch.randint(0, 10, (count,), generator=g)

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        time.sleep(0.0005)  # storage latency
        return self.x[index], self.y[index]


def main() -> None:
    args = parse_args("A Lightning Trainer job with a slow dataset.")
    if L is None:
        skip("neither lightning nor pytorch_lightning is importable")
    device = pick_device(args.device)
    seed_everything()
    clock = Clock("l", args, device)
    gpu = device.type == "cuda"
    features, width = (512, 2048) if gpu else (256, 512)

    class Classifier(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(
                nn.Linear(features, width),
                nn.GELU(),
                nn.Linear(width, width),
                nn.GELU(),
                nn.Linear(width, 10),
            )
            self.marks: dict[str, float] = {}

        def training_step(self, batch, batch_idx):  # type: ignore[no-untyped-def]
            x, y = batch
            return F.cross_entropy(self.net(x), y)

        def configure_optimizers(self):  # type: ignore[no-untyped-def]
            return torch.optim.AdamW(self.parameters(), lr=1e-3)

        def on_before_batch_transfer(self, batch, dataloader_idx):  # type: ignore[no-untyped-def]
            if clock.truth:
                now = time.perf_counter()
                clock.add("data", now - self.marks.get("end", now))
                self.marks["transfer"] = now
            return batch

        def on_after_batch_transfer(self, batch, dataloader_idx):  # type: ignore[no-untyped-def]
            if clock.truth:
                clock.synchronize()
                clock.add("copy", time.perf_counter() - self.marks["transfer"])
            return batch

    class Timing(L.Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):  # type: ignore[no-untyped-def]
            pl_module.marks["start"] = time.perf_counter()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):  # type: ignore[no-untyped-def]
            if clock.truth:
                clock.synchronize()
                now = time.perf_counter()
                clock.add("compute", now - pl_module.marks["start"])
                clock.manual_step()  # the next step starts here
                pl_module.marks["end"] = now
            loss = outputs["loss"].detach() if clock.train_steps == 0 else None
            if clock.step_done(len(batch[0]), loss):
                trainer.should_stop = True

    warnings.filterwarnings("ignore", ".*does not have many workers.*")
    loader = DataLoader(
        SlowRecords(65536, features),
        batch_size=64,
        shuffle=True,
        num_workers=2,
        pin_memory=gpu,
        persistent_workers=True,
    )
    trainer = L.Trainer(
        accelerator="gpu" if gpu else "cpu",
        devices=1,
        max_steps=10**7,
        max_epochs=-1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[Timing()],
        num_sanity_val_steps=0,
    )
    trainer.fit(Classifier(), train_dataloaders=loader)
    clock.finish(tags={"lightning": L.__name__})


if __name__ == "__main__":
    main()
