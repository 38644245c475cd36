"""PCIe figures as the panes show them, built on xfertop.analysis.pcie_link.

Adds what only the display needs: the chart scale and the "sampled" mark for 20 ms sampler figures.
"""

from __future__ import annotations

import math

from xfertop.analysis import pcie_link
from xfertop.model.gpu import GpuSnapshot, PcieLink

capacity_bytes_per_s = pcie_link.link_bytes_per_s
link_words = pcie_link.link_name


def chart_scale_bytes_per_s(link: PcieLink) -> float | None:
    """Charts scale to what the slot can carry at its best, so a downclocked link shows as a low line."""
    best = pcie_link.link_bytes_per_s(link.gen_max, link.width_max)
    return best or pcie_link.link_bytes_per_s(link.gen_current, link.width_current)


#: The lowest top of an autoscaled PCIe chart: an idle link's trickle stays a low line, not the whole height.
TRAFFIC_SCALE_FLOOR_BYTES_PER_S = 0.1e9


def traffic_scale_bytes_per_s(recent_max_bytes_per_s: float, link: PcieLink) -> float:
    """The top of a PCIe chart: the next 1, 2 or 5 x 10^k at or above what flowed recently (at least
    ``TRAFFIC_SCALE_FLOOR_BYTES_PER_S``), and never above what the link can carry at its best. A job
    moving 0.3 GB/s on a 63 GB/s link draws its shape, not a flat line; the link's capacity stays in
    the chart's title ("of 63.0 (Gen5 x16)")."""
    wanted = max(recent_max_bytes_per_s, TRAFFIC_SCALE_FLOOR_BYTES_PER_S)
    magnitude = 10 ** math.floor(math.log10(wanted))
    nice = next(step * magnitude for step in (1, 2, 5, 10) if step * magnitude >= wanted * (1 - 1e-9))
    best = chart_scale_bytes_per_s(link)
    return min(nice, best) if best else nice


def scale_label(bytes_per_s: float) -> str:
    """A chart's top as its axis shows it: "63G", "2G", "500M"."""
    if bytes_per_s >= 1e9:
        return f"{bytes_per_s / 1e9:.0f}G"
    return f"{bytes_per_s / 1e6:.0f}M"


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
