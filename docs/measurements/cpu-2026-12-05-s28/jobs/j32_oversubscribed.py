"""JPEG decode + augmentation (PIL) in 4 workers on a 2-core box while torch runs 2 intra-op threads:
more workers than cores. The loop waits for data; the cores are full."""
import io, random, time, torch, sys
import numpy as np
from PIL import Image, ImageOps
from torch.utils.data import Dataset, DataLoader
from common import Truth
torch.set_num_threads(2)
def jpeg(seed):
    rng = np.random.default_rng(seed)
    img = Image.fromarray(rng.integers(0, 255, (256, 256, 3), dtype=np.uint8))
    out = io.BytesIO(); img.save(out, "JPEG", quality=90); return out.getvalue()
BLOBS = [jpeg(i) for i in range(64)]
class Jpegs(Dataset):
    def __len__(self): return 4096
    def __getitem__(self, i):
        img = Image.open(io.BytesIO(BLOBS[i % 64])).convert("RGB")
        img = img.resize((160, 160)).crop((16, 16, 144, 144))
        if random.random() < 0.5: img = ImageOps.mirror(img)
        x = torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).permute(2, 0, 1)
        return (x - 0.5) / 0.25, i % 10
loader = DataLoader(Jpegs(), batch_size=32, shuffle=True, num_workers=4, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=4), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4),
                            torch.nn.Flatten(), torch.nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
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
