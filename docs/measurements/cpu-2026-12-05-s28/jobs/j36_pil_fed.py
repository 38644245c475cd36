"""A real JPEG pipeline (PIL decode, resize, crop, flip, normalise) in 2 workers feeding a conv net
that takes longer than the loading: compute-bound, the input keeps up."""
import io, random, time, torch, sys
import numpy as np
from PIL import Image, ImageOps
from torch.utils.data import Dataset, DataLoader
from common import Truth
def jpeg(seed):
    rng = np.random.default_rng(seed)
    img = Image.fromarray(rng.integers(0, 255, (128, 128, 3), dtype=np.uint8))
    out = io.BytesIO(); img.save(out, "JPEG", quality=90); return out.getvalue()
BLOBS = [jpeg(i) for i in range(64)]
class Jpegs(Dataset):
    def __len__(self): return 4096
    def __getitem__(self, i):
        img = Image.open(io.BytesIO(BLOBS[i % 64])).convert("RGB").resize((72, 72)).crop((4, 4, 68, 68))
        if random.random() < 0.5: img = ImageOps.mirror(img)
        x = torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0).permute(2, 0, 1)
        return (x - 0.5) / 0.25, i % 10
loader = DataLoader(Jpegs(), batch_size=32, shuffle=True, num_workers=2, persistent_workers=True)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 48, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(48, 48, 3, stride=2),
                            torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten(), torch.nn.Linear(768, 10))
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
