"""(c) Four DataLoader workers confined to one core by the job's own worker_init_fn.

A speech-style pipeline: each sample crops a 2 s clip from an in-memory waveform, convolves it with a
random room impulse response (reverb augmentation), adds noise and turns it into log-mel features
(torch.stft + a mel matrix): CPU work in the workers. The job "keeps data loading
off the training cores" by pinning every worker to the first core it may use
(``os.sched_setaffinity(0, {core})`` in worker_init_fn), so four workers share one core. More workers
cannot help; widening their affinity would.

    python benchmarks/scenarios/confined_workers.py [--seconds 20] [--truth]
"""

from __future__ import annotations

import math
import os

import torch
from _common import Clock, parse_args, pick_device, seed_everything
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset

SAMPLE_RATE = 16_000
N_FFT, HOP, N_MELS = 512, 160, 64
CLIP = 2 * SAMPLE_RATE
RIR_TAPS = 512
#: The one core all workers are pinned to.
DATA_CORE = min(os.sched_getaffinity(0))


def mel_matrix(n_freqs: int = N_FFT // 2 + 1, n_mels: int = N_MELS) -> torch.Tensor:
    """A triangular mel filterbank (HTK formula), (n_freqs, n_mels)."""

    def hz_to_mel(hz: torch.Tensor) -> torch.Tensor:
        return 2595 * torch.log10(1 + hz / 700)

    freqs = torch.linspace(0, SAMPLE_RATE / 2, n_freqs)
    mel_points = torch.linspace(0, float(hz_to_mel(torch.tensor(SAMPLE_RATE / 2))), n_mels + 2)
    hz_points = 700 * (10 ** (mel_points / 2595) - 1)
    fb = torch.zeros(n_freqs, n_mels)
    for m in range(n_mels):
        left, centre, right = hz_points[m], hz_points[m + 1], hz_points[m + 2]
        rise = (freqs - left) / (centre - left)
        fall = (right - freqs) / (right - centre)
        fb[:, m] = torch.clamp(torch.minimum(rise, fall), min=0)
    return fb


class Clips(Dataset):
    def __init__(self, count: int, unique: int = 32, seconds: float = 4.0) -> None:
        g = torch.Generator().manual_seed(0)
        t = torch.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
        self.waves = [
            sum(
                torch.sin(2 * math.pi * f * t) * a
                for f, a in zip(
                    torch.randint(80, 4000, (6,), generator=g).tolist(),
                    torch.rand(6, generator=g).tolist(),
                    strict=True,
                )
            )
            + 0.05 * torch.randn(t.shape, generator=g)
            for _ in range(unique)
        ]
        self.count = count
        self.labels = torch.randint(0, 35, (count,), generator=g)
        self.mel = mel_matrix()
        self.window = torch.hann_window(N_FFT)

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        wave = self.waves[index % len(self.waves)]
        start = int(torch.randint(0, wave.numel() - CLIP, ()).item())
        clip = wave[start : start + CLIP] * (0.5 + torch.rand(()))
        decay = torch.exp(-torch.arange(RIR_TAPS) / (RIR_TAPS * (0.1 + 0.3 * torch.rand(()))))
        rir = torch.randn(RIR_TAPS) * decay
        rir[0] = 1.0
        n = CLIP + RIR_TAPS  # linear convolution through the FFT
        clip = torch.fft.irfft(torch.fft.rfft(clip, n) * torch.fft.rfft(rir, n), n)[:CLIP]
        clip = clip + 0.01 * torch.randn_like(clip)
        spec = torch.stft(clip, N_FFT, HOP, window=self.window, return_complex=True).abs().pow(2)
        features = torch.log(spec.T @ self.mel + 1e-6)  # (frames, mels)
        return (features - features.mean()) / (features.std() + 1e-5), self.labels[index]


def pin_to_data_core(worker_id: int) -> None:
    # "Keep data loading off the training cores": every worker goes to the same single core.
    os.sched_setaffinity(0, {DATA_CORE})


def main() -> None:
    args = parse_args("Four DataLoader workers confined to one core.")
    device = pick_device(args.device)
    seed_everything()
    clock = Clock("c", args, device)
    loader = DataLoader(
        Clips(8192),
        batch_size=32,
        shuffle=True,
        num_workers=4,
        worker_init_fn=pin_to_data_core,
        persistent_workers=True,
        pin_memory=device.type == "cuda",
        drop_last=True,
    )
    width = 256 if device.type == "cuda" else 32
    model = nn.Sequential(
        nn.Conv1d(N_MELS, width, 5, stride=2, padding=2),
        nn.ReLU(),
        nn.Conv1d(width, width, 5, stride=2, padding=2),
        nn.ReLU(),
        nn.AdaptiveAvgPool1d(1),
        nn.Flatten(),
        nn.Linear(width, 35),
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    while not clock.done:
        for x, y in clock.timed(loader):
            with clock.phase("copy"):
                x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            with clock.phase("compute"):
                loss = F.cross_entropy(model(x.transpose(1, 2)), y)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
            if clock.step_done(len(x), loss.detach() if clock.train_steps == 0 else None):
                break
    clock.finish(tags={"workers": "4", "worker_cores": "1"})


if __name__ == "__main__":
    main()
