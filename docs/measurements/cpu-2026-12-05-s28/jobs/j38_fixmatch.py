"""Semi-supervised (FixMatch-style): each step takes a labelled batch of 16 and an unlabelled batch of
7x16 with strong augmentation, from two loaders of 2 workers each; the unlabelled iterator is made anew
on StopIteration. The unlabelled loader's augmentation is the cost."""
import time, torch, sys
from torch.utils.data import Dataset, DataLoader
from common import Truth
class Images(Dataset):
    def __init__(self, n, strong): self.n, self.strong = n, strong
    def __len__(self): return self.n
    def __getitem__(self, i):
        x = torch.rand(3, 32, 32)
        if self.strong:  # two views, RandAugment-like ops in tensor maths
            views = []
            for _ in range(2):
                v = x.clone()
                for _ in range(6):
                    v = torch.roll(v, shifts=int(torch.randint(-4, 4, ())), dims=2)
                    v = (v * torch.rand(3, 1, 1) + torch.rand(3, 1, 1) * 0.1).clamp(0, 1)
                    v = torch.nn.functional.avg_pool2d(v[None], 3, 1, 1)[0]
                views.append(v)
            return views[0], views[1]
        return x, i % 10
labelled = DataLoader(Images(4000, False), batch_size=16, shuffle=True, num_workers=2, persistent_workers=True, drop_last=True)
unlabelled = DataLoader(Images(50000, True), batch_size=16 * 7, shuffle=True, num_workers=2, persistent_workers=True, drop_last=True)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten(), torch.nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.03, momentum=0.9)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
u_iter = iter(unlabelled)
while time.time() < deadline:
    truth.t = time.perf_counter()
    for x, y in labelled:
        try:
            weak, strong = next(u_iter)
        except StopIteration:
            u_iter = iter(unlabelled); weak, strong = next(u_iter)
        truth.mark("wait")
        logits = model(torch.cat([x, weak, strong]))
        lx, lw, ls = logits[:16], logits[16:16 + 112], logits[16 + 112:]
        probs = lw.detach().softmax(1); conf, pseudo = probs.max(1)
        loss = torch.nn.functional.cross_entropy(lx, y) + (torch.nn.functional.cross_entropy(ls, pseudo, reduction="none") * (conf > 0.95)).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model"); truth.next_step()
        if time.time() > deadline: break
truth.report()
