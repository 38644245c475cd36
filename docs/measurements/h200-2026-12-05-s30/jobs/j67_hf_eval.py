"""A Hugging Face Trainer job that evaluates every 50 steps (eval_strategy="steps") over an eval set read by
the Trainer's own loader (2 workers, not persistent: they start at each evaluation). BERT from a config,
token ids in memory. Truth: a callback's host clock, synchronised: model = on_step_begin..on_step_end,
evaluation = the time inside Trainer.evaluate (the loop's work after the step), wait = the rest between
on_step_end and the next on_step_begin (the Trainer fetching the next batch)."""
import os, sys, time, tempfile
import torch
from torch.utils.data import Dataset
import transformers
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainerCallback, TrainingArguments
from common import Truth
transformers.logging.set_verbosity_error()
gpu = torch.cuda.is_available()
hidden, layers, seq, batch = (512, 4, 128, 32) if gpu else (128, 2, 64, 16)
class Tok(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(n)
        self.ids = torch.randint(5, 8192, (n, seq), generator=g); self.y = torch.randint(0, 4, (n,), generator=g)
    def __len__(self): return len(self.ids)
    def __getitem__(self, i): return {"input_ids": self.ids[i], "attention_mask": torch.ones_like(self.ids[i]), "labels": self.y[i]}
truth = Truth(); deadline = time.time() + float(sys.argv[1]); evals = [0, 0.0]
class Clock(TrainerCallback):
    def on_step_begin(self, a, state, control, **kw):
        truth.mark("wait")
    def on_step_end(self, a, state, control, **kw):
        truth.mark("model"); truth.next_step()
        if time.time() > deadline: control.should_training_stop = True
class TimedTrainer(Trainer):
    def evaluate(self, *a, **kw):
        began = time.perf_counter(); out = super().evaluate(*a, **kw)
        if truth.cuda: torch.cuda.synchronize()
        took = time.perf_counter() - began; evals[0] += 1; evals[1] += took
        truth.add("loop_post", took); truth.t += took  # the evaluation is not the next batch's wait
        return out
model = BertForSequenceClassification(BertConfig(vocab_size=8192, hidden_size=hidden, num_hidden_layers=layers,
    num_attention_heads=max(2, hidden // 64), intermediate_size=4 * hidden, max_position_embeddings=seq, num_labels=4))
with tempfile.TemporaryDirectory() as out:
    args = TrainingArguments(output_dir=out, per_device_train_batch_size=batch, per_device_eval_batch_size=batch,
        max_steps=10**7, eval_strategy="steps", eval_steps=50, logging_strategy="no", save_strategy="no",
        report_to=[], disable_tqdm=True, dataloader_num_workers=2, use_cpu=not gpu)
    trainer = TimedTrainer(model=model, args=args, train_dataset=Tok(16384), eval_dataset=Tok(24 * batch), callbacks=[Clock()])
    result = trainer.train()
print(f"result trained={trainer.state.global_step} evaluations={evals[0]} eval_s={evals[1]:.1f}", flush=True)
truth.report(trained=trainer.state.global_step, evaluations=evals[0])
