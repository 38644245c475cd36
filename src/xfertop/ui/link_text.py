"""PCIe figures as the panes show them, built on xfertop.analysis.pcie_link.

Adds what only the display needs: the chart scale and the "sampled" mark for 20 ms sampler figures.
"""

from __future__ import annotations

from xfertop.analysis import pcie_link
from xfertop.model.gpu import GpuSnapshot, PcieLink

capacity_bytes_per_s = pcie_link.link_bytes_per_s
link_words = pcie_link.link_name


def chart_scale_bytes_per_s(link: PcieLink) -> float | None:
    """Charts scale to what the slot can carry at its best, so a downclocked link shows as a low line."""
    best = pcie_link.link_bytes_per_s(link.gen_max, link.width_max)
    return best or pcie_link.link_bytes_per_s(link.gen_current, link.width_current)


def direction_label(direction: str, rate_bytes_per_s: float | None, snapshot: GpuSnapshot) -> str:
    """ "RX 54.9 GB/s of 63.0 (Gen5 x16)", plus " sampled" when it is a 20 ms sample, not the whole time."""
    if snapshot.pcie.method == "none":
        rate_bytes_per_s = None
    link = snapshot.link
    label = pcie_link.throughput_label(direction, rate_bytes_per_s, link.gen_current, link.width_current)
    if snapshot.pcie.method == "sampled" and rate_bytes_per_s is not None:
        label += " sampled"
    return label


def short_label(label: str) -> str:
    """The same label with "sampled" as a "~" before the figure: "RX ~54.9 GB/s of 63.0 (Gen5 x16)"."""
    if not label.endswith(" sampled"):
        return label
    direction, _, rest = label.removesuffix(" sampled").partition(" ")
    return f"{direction} ~{rest}"


def link_warning(snapshot: GpuSnapshot) -> str | None:
    return pcie_link.link_warning(snapshot.link, snapshot.pcie.rx_bytes_per_s, snapshot.pcie.tx_bytes_per_s)


def short_warning(snapshot: GpuSnapshot) -> str | None:
    """The warning in a few words for the GPU line; the detail view gives the full sentence."""
    if link_warning(snapshot) is None:
        return None
    link = snapshot.link
    gen_max = link.gen_max if link.gen_max is not None else link.gen_gpu_max
    now = link_words(link.gen_current, link.width_current)
    return f"link {now}, can do {link_words(gen_max, link.width_max)}"
