"""(m) A Hugging Face Trainer job (only when ``transformers`` imports; otherwise "skipped: ..." and exit 0).
A BERT classifier built from a BertConfig (no weights, nothing downloaded), pre-tokenised sequences held
in memory, the Trainer's own DataLoader (2 workers): compute-bound.

On a GPU: hidden 768, 6 layers, sequence 256, batch 32. On a CPU: hidden 128, 2 layers, sequence 64,
batch 16.

The deadline and the --truth timings come from a TrainerCallback: data is one step's ``on_step_end`` to
the next ``on_step_begin`` (the Trainer fetches the batch, and accelerate moves it to the device, in
between); copy is ``on_step_begin`` to the model's forward pre-hook; compute is that to
``on_step_end`` (forward, backward, optimizer step).

    python benchmarks/scenarios/hf_trainer_job.py [--seconds 20] [--truth]
"""

from __future__ import annotations

import os
import tempfile
import time

import torch
from _common import Clock, parse_args, pick_device, seed_everything, skip
from torch.utils.data import Dataset

try:
    import transformers
    from transformers import (
        BertConfig,
        BertForSequenceClassification,
        Trainer,
        TrainerCallback,
        TrainingArguments,
    )
except ImportError:
    transformers = None


class Tokenised(Dataset):
    def __init__(self, count: int, seq: int, vocab: int) -> None:
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(5, vocab, (count, seq), generator=g)
        self.labels = torch.randint(0, 4, (count,), generator=g)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        ids = self.ids[index]
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": self.labels[index]}


def main() -> None:
    args = parse_args("A Hugging Face Trainer job (BERT from a config, data in memory).")
    if transformers is None:
        skip("transformers is not importable")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    transformers.logging.set_verbosity_error()
    device = pick_device(args.device)
    seed_everything()
    clock = Clock("m", args, device)
    gpu = device.type == "cuda"
    hidden, layers, seq, batch = (768, 6, 256, 32) if gpu else (128, 2, 64, 16)
    vocab = 8192
    config = BertConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=max(2, hidden // 64),
        intermediate_size=4 * hidden,
        max_position_embeddings=seq,
        num_labels=4,
    )
    model = BertForSequenceClassification(config)
    marks: dict[str, float] = {}

    def forward_pre_hook(module, inputs):  # type: ignore[no-untyped-def]
        if clock.truth and model.training and "begin" in marks:
            clock.synchronize()
            now = time.perf_counter()
            clock.add("copy", now - marks.pop("begin"))
            marks["forward"] = now

    model.register_forward_pre_hook(forward_pre_hook)

    class Timing(TrainerCallback):
        def on_step_begin(self, args_, state, control, **kwargs):  # type: ignore[no-untyped-def]
            if clock.truth:
                now = time.perf_counter()
                clock.add("data", now - marks.get("end", now))
                marks["begin"] = now

        def on_step_end(self, args_, state, control, **kwargs):  # type: ignore[no-untyped-def]
            if clock.truth:
                clock.synchronize()
                now = time.perf_counter()
                clock.add("compute", now - marks.pop("forward", now))
                clock.manual_step()
                marks["end"] = now
            if clock.step_done(batch):
                control.should_training_stop = True
            return control

    with tempfile.TemporaryDirectory() as out:
        training_args = TrainingArguments(
            output_dir=out,
            per_device_train_batch_size=batch,
            max_steps=10**7,
            learning_rate=1e-4,
            logging_strategy="no",
            save_strategy="no",
            report_to=[],
            disable_tqdm=True,
            seed=0,
            dataloader_num_workers=2,
            dataloader_persistent_workers=True,
            dataloader_pin_memory=gpu,
            use_cpu=not gpu,
        )
        trainer = Trainer(
            model=model, args=training_args, train_dataset=Tokenised(32768, seq, vocab), callbacks=[Timing()]
        )
        trainer.train()
    clock.finish(tags={"transformers": transformers.__version__})


if __name__ == "__main__":
    main()
