"""timm-style loop: after the copy, Mixup on the batch in the loop (a Beta draw, a permutation, blended
images and one-hot targets with label smoothing) then the model. 3 workers decode-and-flip in the
Dataset. Truth: wait, copy, the loop's mixup (loop_pre), the model step."""
import sys, time, torch
from torch.utils.data import DataLoader, Dataset
from common import Truth
gpu = torch.cuda.is_available(); dev = torch.device("cuda" if gpu else "cpu")
class Images(Dataset):
    def __init__(self, n): self.x = torch.randint(0, 255, (n, 3, 48, 48), dtype=torch.uint8); self.y = torch.randint(0, 50, (n,))
    def __len__(self): return len(self.x)
    def __getitem__(self, i):
        x = self.x[i].float().div_(255)
        if torch.rand(()) < 0.5: x = x.flip(-1)
        return x, self.y[i]
loader = DataLoader(Images(4096), batch_size=128 if gpu else 32, shuffle=True, num_workers=3, pin_memory=gpu,
                    persistent_workers=True, drop_last=True)
w = 128 if gpu else 24
model = torch.nn.Sequential(torch.nn.Conv2d(3, w, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(w, w, 3, padding=1),
                            torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(w, 50)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
beta = torch.distributions.Beta(0.4, 0.4)
def mixup(x, y):
    lam = float(beta.sample())
    perm = torch.randperm(x.shape[0], device=x.device)
    target = torch.nn.functional.one_hot(y, 50).float() * 0.9 + 0.1 / 50
    return lam * x + (1 - lam) * x[perm], lam * target + (1 - lam) * target[perm]
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        truth.mark("copy")
        x, soft = mixup(x, y)
        truth.mark("loop_pre")
        loss = torch.sum(-soft * torch.log_softmax(model(x), dim=1), dim=1).mean()
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
        truth.mark("model"); truth.next_step()
        if time.time() > deadline: break
truth.report()
