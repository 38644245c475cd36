"""A text classifier: the Dataset holds Python strings, a collate_fn tokenises them character by character
and pads (in the main process: num_workers=0, the default). Truth books collate as wait (it runs in next())."""
import random, time, torch, sys
from torch.utils.data import DataLoader
from common import Truth
random.seed(0)
words = ["".join(random.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(random.randint(2, 9))) for _ in range(5000)]
texts = [" ".join(random.choice(words) for _ in range(random.randint(20, 200))) for _ in range(4000)]
labels = [random.randint(0, 3) for _ in texts]
vocab = {c: i + 1 for i, c in enumerate(" abcdefghijklmnopqrstuvwxyz")}
def collate(batch):
    ids = [[vocab[c] for c in text] for text, _ in batch]
    longest = max(map(len, ids))
    padded = torch.tensor([row + [0] * (longest - len(row)) for row in ids])
    return padded, torch.tensor([label for _, label in batch])
loader = DataLoader(list(zip(texts, labels)), batch_size=32, shuffle=True, collate_fn=collate)
emb = torch.nn.EmbeddingBag(28, 64); head = torch.nn.Linear(64, 4)
opt = torch.optim.Adam([*emb.parameters(), *head.parameters()], lr=1e-3)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        loss = torch.nn.functional.cross_entropy(head(emb(x)), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model"); truth.next_step()
        if time.time() > deadline: break
truth.report()
