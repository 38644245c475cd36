"""A Hugging Face-style text batch: a Dataset of token lists, a collator padding them into a dict
(input_ids, attention_mask, labels) in 2 workers; a small transformer encoder classifies."""
import random, time, torch, sys
from torch.utils.data import Dataset, DataLoader
from common import Truth
random.seed(0)
class Tokens(Dataset):
    def __init__(self): self.rows = [[random.randint(1, 999) for _ in range(random.randint(16, 128))] for _ in range(4000)]
    def __len__(self): return len(self.rows)
    def __getitem__(self, i): return {"input_ids": self.rows[i], "label": i % 2}
def collate(items):
    longest = max(len(it["input_ids"]) for it in items)
    ids = torch.zeros(len(items), longest, dtype=torch.long); mask = torch.zeros(len(items), longest, dtype=torch.long)
    for r, it in enumerate(items):
        ids[r, :len(it["input_ids"])] = torch.tensor(it["input_ids"]); mask[r, :len(it["input_ids"])] = 1
    return {"input_ids": ids, "attention_mask": mask, "labels": torch.tensor([it["label"] for it in items])}
loader = DataLoader(Tokens(), batch_size=32, shuffle=True, num_workers=2, persistent_workers=True, collate_fn=collate)
emb = torch.nn.Embedding(1000, 128)
enc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(128, 4, 256, batch_first=True), 2)
head = torch.nn.Linear(128, 2)
params = [*emb.parameters(), *enc.parameters(), *head.parameters()]
opt = torch.optim.AdamW(params, lr=1e-4)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for batch in loader:
        truth.mark("wait")
        h = enc(emb(batch["input_ids"]), src_key_padding_mask=batch["attention_mask"] == 0)
        loss = torch.nn.functional.cross_entropy(head(h[:, 0]), batch["labels"])
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model"); truth.next_step()
        if time.time() > deadline: break
truth.report()
