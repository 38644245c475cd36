"""A user's job, not built for xfertop: JPEG decode + torchvision augmentation in 4 non-persistent
workers, pinned batches, a ResNet-18 from its config under bf16 autocast, 3 epochs of 40 steps with a
validation loader after each, a `break` out of the last epoch, then exit code 3 on purpose.

The last line holds what must be equal with and without xfertop: steps, the labels seen, the
validation accuracy and the last loss (rounded: cuDNN is deterministic here, but bf16 sums vary).
    python user_job.py
"""

import io
import random
import sys

import torch
import torchvision
from PIL import Image
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms

torch.manual_seed(0)
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False


class Jpegs(Dataset):
    def __init__(self, count, train):
        rng = random.Random(1 if train else 2)
        self.items = []
        for _ in range(64):
            image = Image.new("RGB", (320, 320), tuple(rng.randrange(256) for _ in range(3)))
            image.paste(tuple(rng.randrange(256) for _ in range(3)), (40, 40, 200, 260))
            buffer = io.BytesIO()
            image.save(buffer, "JPEG", quality=90)
            self.items.append(buffer.getvalue())
        self.count = count
        augment = (
            [transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip()]
            if train
            else [transforms.Resize(256), transforms.CenterCrop(224)]
        )
        self.transform = transforms.Compose(
            [*augment, transforms.ToTensor(), transforms.Normalize((0.5,) * 3, (0.25,) * 3)]
        )

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        image = Image.open(io.BytesIO(self.items[index % 64])).convert("RGB")
        return self.transform(image), index % 10


def main():
    device = torch.device("cuda")
    train = DataLoader(
        Jpegs(40 * 64, True),
        batch_size=64,
        shuffle=True,
        num_workers=4,
        pin_memory=True,
        generator=torch.Generator().manual_seed(0),
        drop_last=True,
    )
    val = DataLoader(Jpegs(8 * 64, False), batch_size=64, num_workers=2, pin_memory=True)
    model = torchvision.models.resnet18(num_classes=10).to(device).to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    steps, labels_seen, loss = 0, 0, None
    for epoch in range(3):
        model.train()
        for n, (x, y) in enumerate(train):
            x = x.to(device, non_blocking=True).to(memory_format=torch.channels_last)
            y = y.to(device, non_blocking=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            steps += 1
            labels_seen += int(y.sum())
            if epoch == 2 and n == 24:
                break
        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in val:
                x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    correct += int((model(x).argmax(1) == y).sum())
        print(f"epoch {epoch}: val_acc={correct / len(val.dataset):.3f}", flush=True)
    print(f"result steps={steps} labels_seen={labels_seen} last_loss={float(loss):.1f}", flush=True)
    sys.exit(3)


if __name__ == "__main__":
    main()
