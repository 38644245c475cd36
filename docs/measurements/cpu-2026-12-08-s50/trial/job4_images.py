"""Image classifier: Dataset decodes/augments with PIL in __getitem__ (random resized crop,
flip, blur, colour jitter, resize), 2 DataLoader workers, small CNN."""
import random, io, torch, torch.nn as nn
from PIL import Image, ImageFilter, ImageEnhance
from torch.utils.data import Dataset, DataLoader
from truth import Truth, pc

class Photos(Dataset):
    def __init__(self, n):
        self.n = n; self.blobs = []
        r = random.Random(0)
        for i in range(64):   # a pool of encoded JPEGs, as if read from disk
            im = Image.effect_noise((384, 320), 40 + i).convert("RGB").filter(ImageFilter.GaussianBlur(2))
            b = io.BytesIO(); im.save(b, "JPEG", quality=90); self.blobs.append(b.getvalue())
    def __len__(self): return self.n
    def __getitem__(self, i):
        r = random.Random(i)
        im = Image.open(io.BytesIO(self.blobs[i % 64])).convert("RGB")
        w, h = im.size; s = r.uniform(0.5, 1.0)
        cw, ch = int(w * s), int(h * s); x0, y0 = r.randint(0, w - cw), r.randint(0, h - ch)
        im = im.crop((x0, y0, x0 + cw, y0 + ch)).resize((128, 128), Image.BILINEAR)
        if r.random() < 0.5: im = im.transpose(Image.FLIP_LEFT_RIGHT)
        im = ImageEnhance.Brightness(im).enhance(r.uniform(0.8, 1.2))
        im = ImageEnhance.Contrast(im).enhance(r.uniform(0.8, 1.2))
        im = im.filter(ImageFilter.GaussianBlur(r.uniform(0.1, 1.5))).resize((64, 64), Image.BILINEAR)
        t = torch.frombuffer(bytearray(im.tobytes()), dtype=torch.uint8).view(64, 64, 3).permute(2, 0, 1)
        t = (t.float() / 255 - 0.5) / 0.25
        return t, (i % 64) % 10

if __name__ == "__main__":
    torch.manual_seed(0)
    loader = DataLoader(Photos(3200), batch_size=32, shuffle=True, num_workers=2)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
                          nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
    opt = torch.optim.SGD(model.parameters(), 0.05, momentum=0.9); lossf = nn.CrossEntropyLoss()
    truth = Truth()
    for ep in range(3):
        t0 = pc(); it = iter(loader); tot = 0.0; n = 0; correct = 0
        while True:
            try: x, y = next(it)
            except StopIteration: break
            t1 = pc(); x, y = x.to("cpu"), y.to("cpu"); t2 = pc()
            out = model(x); loss = lossf(out, y); opt.zero_grad(); loss.backward(); opt.step()
            t3 = pc()
            tot += loss.item(); n += 1; correct += (out.argmax(1) == y).sum().item()
            t4 = pc(); truth.add(t0, t1, t2, t3, t4); t0 = pc()
        print(f"epoch {ep} loss {tot/n:.4f} acc {correct/3200:.3f}")
    truth.report()
