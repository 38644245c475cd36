"""An IterableDataset streaming text lines with a shuffle buffer, tokenised in Python, num_workers=0."""
import time, torch, sys, random
from torch.utils.data import IterableDataset, DataLoader
from common import Truth

class Lines(IterableDataset):
    def __iter__(self):
        rng = random.Random(0); buffer = []
        words = [f"w{i}" for i in range(3000)]
        while True:
            line = " ".join(rng.choice(words) for _ in range(120))
            buffer.append(line)
            if len(buffer) >= 64:
                line = buffer.pop(rng.randrange(len(buffer)))
                ids = [int(w[1:]) % 3000 for w in line.split()][:64]
                yield torch.tensor(ids)

loader = DataLoader(Lines(), batch_size=32, num_workers=0)
emb = torch.nn.EmbeddingBag(3000, 256); head = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10))
opt = torch.optim.Adam([*emb.parameters(), *head.parameters()])
truth = Truth(); deadline = time.time() + float(sys.argv[1])
truth.t = time.perf_counter()
for x in loader:
    truth.mark("wait")
    loss = head(emb(x)).logsumexp(1).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    truth.mark("model")
    truth.next_step()
    if time.time() > deadline: break
truth.report()
