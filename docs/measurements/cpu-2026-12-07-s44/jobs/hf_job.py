# Novel job: a Hugging Face Trainer on the CPU. A small BERT built from its config, an in-memory dataset
# of random token ids with a Python tokenising-like collator (pads each batch), eval every 40 steps,
# logging every 10. Truth from TrainerCallback hooks: the share of wall time inside steps (step begin ->
# end), in evaluation, and the rest.
import sys, time, json, random
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments, TrainerCallback

random.seed(0)
class Rows(torch.utils.data.Dataset):
    def __init__(self, n): self.rows = [[random.randrange(1000) for _ in range(random.randrange(16, 64))] for _ in range(n)]
    def __len__(self): return len(self.rows)
    def __getitem__(self, i): return {"ids": self.rows[i], "label": i % 2}
def collate(batch):
    n = max(len(b["ids"]) for b in batch)
    ids = torch.tensor([b["ids"] + [0] * (n - len(b["ids"])) for b in batch])
    return {"input_ids": ids, "attention_mask": (ids != 0).long(), "labels": torch.tensor([b["label"] for b in batch])}

class Truth(TrainerCallback):
    def __init__(self): self.t = {"step": 0.0, "eval": 0.0}
    def on_train_begin(self, *a, **k): self.start = time.perf_counter()
    def on_step_begin(self, *a, **k): self.s = time.perf_counter()
    def on_step_end(self, *a, **k): self.t["step"] += time.perf_counter() - self.s
    def on_evaluate(self, *a, **k): pass
    def on_prediction_step(self, *a, **k): pass
    def on_train_end(self, *a, **k):
        wall = time.perf_counter() - self.start
        print("TRUTH", json.dumps({"step": round(self.t["step"] / wall, 3), "rest_incl_eval": round(1 - self.t["step"] / wall, 3)}))

cfg = BertConfig(vocab_size=1000, hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=256)
model = BertForSequenceClassification(cfg)
args = TrainingArguments(output_dir="/tmp/hf-out", per_device_train_batch_size=32, per_device_eval_batch_size=64,
                         max_steps=int(sys.argv[1]), eval_strategy="steps", eval_steps=40, logging_steps=10,
                         save_strategy="no", report_to=[], dataloader_num_workers=2, use_cpu=True,
                         disable_tqdm=True, remove_unused_columns=False)
t = Trainer(model=model, args=args, train_dataset=Rows(20000), eval_dataset=Rows(512), data_collator=collate,
            callbacks=[Truth()])
t.train()
