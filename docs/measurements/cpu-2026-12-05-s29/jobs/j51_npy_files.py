"""A Dataset of .npy files on local disk (one 192 KB sample each, read with torch.load of a saved tensor
per sample), 4 workers on this 2-core box, batch 32, an MLP over the flattened sample."""
import os, tempfile, time, torch, sys
from torch.utils.data import Dataset, DataLoader
from common import Truth
root = tempfile.mkdtemp()
for i in range(600):
    torch.save(torch.randn(48, 1024), os.path.join(root, f"{i}.pt"))
class Files(Dataset):
    def __len__(self): return 600
    def __getitem__(self, i):
        x = torch.load(os.path.join(root, f"{i}.pt"))
        return x.mean(0), i % 10
loader = DataLoader(Files(), batch_size=32, shuffle=True, num_workers=4, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model"); truth.next_step()
        if time.time() > deadline: break
truth.report()
