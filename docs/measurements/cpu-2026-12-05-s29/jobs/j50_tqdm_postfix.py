"""The common loop: tqdm around the loader, `set_postfix(loss=loss.item())` every step, 2 workers doing a
light transform; a small CNN on 32x32 images. Truth books tqdm's own work as the loop's (after the step)."""
import time, torch, sys
from torch.utils.data import Dataset, DataLoader
from tqdm import tqdm
from common import Truth
class Images(Dataset):
    def __init__(self): self.x = torch.randint(0, 255, (5000, 3, 32, 32), dtype=torch.uint8)
    def __len__(self): return len(self.x)
    def __getitem__(self, i):
        img = self.x[i].float() / 255
        if torch.rand(()) < 0.5: img = img.flip(-1)
        return (img - 0.5) / 0.25, int(i % 10)
loader = DataLoader(Images(), batch_size=64, shuffle=True, num_workers=2, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                            torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                            torch.nn.Flatten(), torch.nn.Linear(64, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    bar = tqdm(loader, file=sys.stderr, mininterval=0)
    truth.t = time.perf_counter()
    for x, y in bar:
        truth.mark("wait")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model")
        bar.set_postfix(loss=loss.item())
        truth.mark("loop_post"); truth.next_step()
        if time.time() > deadline: break
truth.report()
