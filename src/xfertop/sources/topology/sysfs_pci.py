"""PCI devices as sysfs shows them: the path of a device up to its root port, and each hop's link.

Everything is read below ``sysfs_root`` (``/sys`` live, a captured tree in tests). Nothing here raises
for a missing or unreadable file: the value is None. Link files exist only on PCIe functions; a VM
with a flattened bus has none of them, and its GPU sits straight under the host bridge.
"""

from __future__ import annotations

import os
from pathlib import Path

from xfertop.model.topology import PcieHop

#: The files read for every PCI function (benchmarks/capture_sysfs.py captures exactly these).
PCI_ATTRIBUTE_FILES = (
    "class",
    "vendor",
    "device",
    "numa_node",
    "local_cpulist",
    "current_link_speed",
    "current_link_width",
    "max_link_speed",
    "max_link_width",
)
NVIDIA_VENDOR_ID = 0x10DE
#: 0x0302 "3D controller" (datacenter GPUs) and 0x0300 "VGA compatible controller".
GPU_CLASS_PREFIXES = (0x0302, 0x0300)
_GT_PER_S_TO_GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6, 128.0: 7}


def normalise_bus_id(bus_id: str) -> str:
    """``00000000:06:00.0`` (NVML) or ``0000:06:00.0`` (sysfs) -> ``0000:06:00.0``, lower case."""
    bus_id = bus_id.strip().lower()
    domain, _, rest = bus_id.partition(":")
    if not rest:
        return bus_id
    return f"{int(domain, 16):04x}:{rest}"


def read_attribute(device_dir: Path, name: str) -> str | None:
    try:
        return (device_dir / name).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _int(text: str | None, base: int = 10) -> int | None:
    if text is None:
        return None
    try:
        return int(text, base)
    except ValueError:
        return None


def parse_link_speed_gt_per_s(text: str | None) -> float | None:
    """``"32.0 GT/s PCIe"`` -> 32.0; ``"Unknown"`` or garbage -> None. Older kernels print ``"8 GT/s"``."""
    if not text:
        return None
    head = text.split()[0]
    try:
        return float(head)
    except ValueError:
        return None


def link_gen(speed_gt_per_s: float | None) -> int | None:
    return None if speed_gt_per_s is None else _GT_PER_S_TO_GEN.get(speed_gt_per_s)


def parse_cpulist(text: str | None) -> tuple[int, ...]:
    """``"0-3,8,10-11"`` -> (0, 1, 2, 3, 8, 10, 11); empty or unreadable -> ()."""
    cpus: list[int] = []
    for part in (text or "").strip().split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        try:
            cpus.extend(range(int(first), int(last or first) + 1))
        except ValueError:
            return ()
    return tuple(cpus)


def pci_devices_dir(sysfs_root: Path) -> Path:
    return sysfs_root / "bus" / "pci" / "devices"


def list_bus_ids(sysfs_root: Path) -> list[str]:
    try:
        return sorted(os.listdir(pci_devices_dir(sysfs_root)))
    except OSError:
        return []


def device_path(sysfs_root: Path, bus_id: str) -> tuple[str, ...] | None:
    """The chain under /sys/devices, e.g. ("pci0000:00", "0000:00:01.0", "0000:01:00.0"), or None."""
    link = pci_devices_dir(sysfs_root) / bus_id
    try:
        target = Path(os.path.normpath(link.parent / os.readlink(link)))
    except OSError:
        return None
    devices_dir = Path(os.path.normpath(sysfs_root / "devices"))
    try:
        parts = target.relative_to(devices_dir).parts
    except ValueError:
        return None
    # Some platforms put the host bridge below another node (e.g. "platform/..."): keep from "pci...".
    for i, part in enumerate(parts):
        if part.startswith("pci"):
            return parts[i:]
    return None


def read_hop(sysfs_root: Path, bus_id: str) -> PcieHop:
    device_dir = pci_devices_dir(sysfs_root) / bus_id
    speed_now = parse_link_speed_gt_per_s(read_attribute(device_dir, "current_link_speed"))
    speed_max = parse_link_speed_gt_per_s(read_attribute(device_dir, "max_link_speed"))
    return PcieHop(
        bus_id=bus_id,
        pci_class=_int(read_attribute(device_dir, "class"), 16),
        vendor_id=_int(read_attribute(device_dir, "vendor"), 16),
        device_id=_int(read_attribute(device_dir, "device"), 16),
        link_gen_current=link_gen(speed_now),
        link_width_current=_positive(_int(read_attribute(device_dir, "current_link_width"))),
        link_gen_max=link_gen(speed_max),
        link_width_max=_positive(_int(read_attribute(device_dir, "max_link_width"))),
        link_speed_current_gt_per_s=speed_now,
        link_speed_max_gt_per_s=speed_max,
    )


def _positive(width: int | None) -> int | None:
    # A width of 0 means the link is down or not PCIe Express: not a figure to show.
    return width if width else None


def pcie_path(sysfs_root: Path, bus_id: str) -> tuple[PcieHop, ...]:
    """The device itself, then each PCI bridge above it, up to the root port (nearest first)."""
    chain = device_path(sysfs_root, bus_id)
    if chain is None:
        return (read_hop(sysfs_root, bus_id),)
    functions = [part for part in chain[1:] if _looks_like_bus_id(part)]
    return tuple(read_hop(sysfs_root, hop) for hop in reversed(functions))


def _looks_like_bus_id(name: str) -> bool:
    return name.count(":") == 2 and "." in name


def numa_node(sysfs_root: Path, bus_id: str) -> int | None:
    """The device's NUMA node, None where sysfs says -1 (unknown) or cannot be read."""
    node = _int(read_attribute(pci_devices_dir(sysfs_root) / bus_id, "numa_node"))
    return node if node is not None and node >= 0 else None


def local_cpus(sysfs_root: Path, bus_id: str) -> tuple[int, ...]:
    return parse_cpulist(read_attribute(pci_devices_dir(sysfs_root) / bus_id, "local_cpulist"))


def nvidia_gpu_bus_ids(sysfs_root: Path) -> list[str]:
    """Bus ids of NVIDIA display/3D controllers (class 0x0302 or 0x0300, vendor 0x10de)."""
    found = []
    for bus_id in list_bus_ids(sysfs_root):
        device_dir = pci_devices_dir(sysfs_root) / bus_id
        vendor = _int(read_attribute(device_dir, "vendor"), 16)
        pci_class = _int(read_attribute(device_dir, "class"), 16)
        if vendor == NVIDIA_VENDOR_ID and pci_class is not None and (pci_class >> 8) in GPU_CLASS_PREFIXES:
            found.append(bus_id)
    return found
