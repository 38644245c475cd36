"""torch.multiprocessing.spawn(train, nprocs=1): the script's own process only waits; the training loop
runs in a spawned child (as a DDP script started without torchrun does), 2 workers starve a small MLP."""
import time, torch, sys
import torch.multiprocessing as mp
from torch.utils.data import Dataset, DataLoader
from common import Truth
class Slow(Dataset):
    def __len__(self): return 100000
    def __getitem__(self, i):
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.0015: pass
        return torch.randn(64), i % 10
def train(rank, seconds):
    torch.set_num_threads(1)
    loader = DataLoader(Slow(), batch_size=16, shuffle=True, num_workers=2, persistent_workers=True)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    truth = Truth(); deadline = time.time() + seconds
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model"); truth.next_step()
        if time.time() > deadline: break
    truth.report()
if __name__ == "__main__":
    mp.spawn(train, args=(float(sys.argv[1]),), nprocs=1)
