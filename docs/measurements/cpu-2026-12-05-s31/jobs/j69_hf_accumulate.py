"""A Hugging Face Trainer with gradient_accumulation_steps=4 (the Trainer fetches 4 batches, then runs 4
micro-steps and one optimizer step), 2 loader workers, BERT from a config, no evaluation. Truth: the host
time inside the training loader's next() (the Trainer's own iterator, wrapped) against the rest of the
run from the first optimizer step; the rest is the model's micro-steps and the Trainer's own work."""
import sys, time
import torch
from torch.utils.data import Dataset
import transformers
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainerCallback, TrainingArguments
transformers.logging.set_verbosity_error()
gpu = torch.cuda.is_available()
hidden, layers, seq, batch = (512, 4, 128, 32) if gpu else (128, 2, 64, 8)
class Tok(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(n)
        self.ids = torch.randint(5, 8192, (n, seq), generator=g); self.y = torch.randint(0, 4, (n,), generator=g)
    def __len__(self): return len(self.ids)
    def __getitem__(self, i):
        time.sleep(0.002)  # storage latency per sample
        return {"input_ids": self.ids[i], "attention_mask": torch.ones_like(self.ids[i]), "labels": self.y[i]}
clock = {"wait": 0.0, "t0": None, "steps": 0}
deadline = time.time() + float(sys.argv[1])
class Timed:
    def __init__(self, loader): self.loader = loader
    def __len__(self): return len(self.loader)
    def __getattr__(self, name): return getattr(self.loader, name)
    def __iter__(self):
        it = iter(self.loader)
        while True:
            began = time.perf_counter()
            try: batch = next(it)
            except StopIteration: return
            if clock["t0"] is not None: clock["wait"] += time.perf_counter() - began
            yield batch
class Stop(TrainerCallback):
    def on_step_end(self, a, state, control, **kw):
        clock["steps"] = state.global_step
        if state.global_step == 3: clock["t0"] = time.perf_counter(); clock["wait"] = 0.0
        if time.time() > deadline: control.should_training_stop = True
class TimedTrainer(Trainer):
    def get_train_dataloader(self):
        return Timed(super().get_train_dataloader())
model = BertForSequenceClassification(BertConfig(vocab_size=8192, hidden_size=hidden, num_hidden_layers=layers,
    num_attention_heads=max(2, hidden // 64), intermediate_size=4 * hidden, max_position_embeddings=seq, num_labels=4))
import tempfile
with tempfile.TemporaryDirectory() as out:
    args = TrainingArguments(output_dir=out, per_device_train_batch_size=batch, gradient_accumulation_steps=4,
        max_steps=10**7, logging_strategy="no", save_strategy="no", report_to=[], disable_tqdm=True,
        dataloader_num_workers=2, use_cpu=not gpu)
    TimedTrainer(model=model, args=args, train_dataset=Tok(16384), callbacks=[Stop()]).train()
total = time.perf_counter() - clock["t0"]
w = clock["wait"] / total
import json
print(f"result optimizer_steps={clock['steps']}", flush=True)
print("TRUTH " + json.dumps({"parts": {"wait": round(w, 3), "model": round(1 - w, 3)}, "steps": clock["steps"] * 4}), flush=True)
