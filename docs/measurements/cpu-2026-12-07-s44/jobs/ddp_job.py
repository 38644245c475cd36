# Novel job: DDP on the CPU (gloo, 2 ranks by torchrun). Each rank's dataset costs 1 ms a sample in its
# one worker, rank 1's 3 ms (a slower disk on one node); a small MLP. Truth per rank: wait vs the rest.
import os, time, sys, json
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler
dist.init_process_group("gloo")
rank = dist.get_rank()
class D(Dataset):
    def __len__(self): return 100000
    def __getitem__(self, i):
        t = time.perf_counter()
        while time.perf_counter() - t < (0.003 if rank == 1 else 0.001): pass
        return torch.randn(64), i % 4
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 4)))
opt = torch.optim.SGD(model.parameters(), 0.01)
loader = DataLoader(D(), batch_size=8, sampler=DistributedSampler(D()), num_workers=1, persistent_workers=True)
end = time.monotonic() + float(sys.argv[1]); wait = work = 0.0; t0 = time.perf_counter(); n = 0
for x, y in loader:
    t1 = time.perf_counter(); wait += t1 - t0
    loss = nn.functional.cross_entropy(model(x), y); opt.zero_grad(); loss.backward(); opt.step()
    t0 = time.perf_counter(); work += t0 - t1; n += 1
    stop = torch.tensor(float(time.monotonic() > end)); dist.all_reduce(stop)
    if stop.item() > 0: break
print(f"TRUTH rank {rank}", json.dumps({"wait": round(wait / (wait + work), 3), "model": round(work / (wait + work), 3)}), "steps", n)
dist.destroy_process_group()
