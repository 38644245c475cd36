"""Knowledge distillation: a frozen teacher (4x wider) under no_grad, then the student's forward, a KL +
cross-entropy loss, backward and step; 2 workers with light augmentation. Truth: wait, copy, the model
step (teacher and student together: the model's work), each synchronised."""
import sys, time, torch
from torch.utils.data import DataLoader, Dataset
from common import Truth
gpu = torch.cuda.is_available(); dev = torch.device("cuda" if gpu else "cpu")
class Noisy(Dataset):
    def __init__(self, n): self.x = torch.randn(n, 512); self.y = torch.randint(0, 100, (n,))
    def __len__(self): return len(self.x)
    def __getitem__(self, i):
        x = self.x[i]
        return x + 0.05 * torch.randn_like(x), self.y[i]
def mlp(width): return torch.nn.Sequential(torch.nn.Linear(512, width), torch.nn.GELU(), torch.nn.Linear(width, width),
                                           torch.nn.GELU(), torch.nn.Linear(width, 100)).to(dev)
teacher, student = mlp(2048 if gpu else 1024), mlp(512 if gpu else 256)
teacher.eval().requires_grad_(False)
loader = DataLoader(Noisy(20000), batch_size=256 if gpu else 64, shuffle=True, num_workers=2, pin_memory=gpu,
                    persistent_workers=True)
opt = torch.optim.AdamW(student.parameters(), lr=1e-3)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in loader:
        truth.mark("wait")
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        truth.mark("copy")
        with torch.no_grad():
            soft = torch.softmax(teacher(x) / 2.0, dim=1)
        logits = student(x)
        loss = 0.5 * torch.nn.functional.cross_entropy(logits, y) + 0.5 * torch.nn.functional.kl_div(
            torch.log_softmax(logits / 2.0, dim=1), soft, reduction="batchmean")
        opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
        truth.mark("model"); truth.next_step()
        if time.time() > deadline: break
truth.report()
