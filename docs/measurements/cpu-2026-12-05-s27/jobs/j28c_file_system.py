"""Detection-style batches: collate keeps each sample's tensors in lists (variable sizes, no stacking),
so every batch crosses from the 2 workers as 192 separate tensors (image, boxes, labels per sample);
the model pads them itself."""
import time, torch, sys
from torch.utils.data import Dataset, DataLoader
from common import Truth
class Boxes(Dataset):
    def __len__(self): return 100000
    def __getitem__(self, i):
        n = 1 + i % 7
        return torch.randn(3, 32, 32), torch.rand(n, 4), torch.randint(0, 5, (n,))
def keep_lists(samples):
    images, boxes, labels = zip(*samples)
    return list(images), list(boxes), list(labels)
torch.multiprocessing.set_sharing_strategy("file_system")
loader = DataLoader(Boxes(), batch_size=64, shuffle=True, num_workers=2, persistent_workers=True, collate_fn=keep_lists)
model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 32 * 32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 5))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
truth = Truth(); deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    truth.t = time.perf_counter()
    for images, boxes, labels in loader:
        truth.mark("wait")
        x = torch.stack(images)
        y = torch.stack([l[0] for l in labels])
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        truth.mark("model"); truth.next_step()
        if time.time() > deadline: break
truth.report()
