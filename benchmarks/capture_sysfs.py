"""Capture the sysfs files xfertop's topology reads into a small tar.gz, to become a test fixture.

    python benchmarks/capture_sysfs.py "$OUT" [--name h200]

Writes OUT/sysfs_<name>.tar.gz holding, relative to /sys:
  - bus/pci/devices/<bus id>: every PCI function's symlink (kept as a relative link);
  - devices/pci*/.../<bus id>/{class,vendor,device,numa_node,local_cpulist,current/max_link_speed/width}
    (xfertop.sources.topology.sysfs_pci.PCI_ATTRIBUTE_FILES; a file the kernel lacks is skipped);
  - devices/system/node/node<N>/cpulist.
and OUT/topology_<name>.txt with ``nvidia-smi topo -m`` (when present) next to what xfertop reads from
the same tree, so the two GPU matrices can be compared. Unpack with
``tar -xzf sysfs_<name>.tar.gz -C tests/fixtures/sysfs/<name>``.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from xfertop.sources.gpu.nvml_api import NvmlApi
from xfertop.sources.topology.source import read_topology
from xfertop.sources.topology.sysfs_pci import PCI_ATTRIBUTE_FILES


def add_file(tar: tarfile.TarFile, sysfs_root: Path, relative: str) -> None:
    try:
        data = (sysfs_root / relative).read_bytes()
    except OSError:
        return
    info = tarfile.TarInfo(relative)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def add_symlink(tar: tarfile.TarFile, relative: str, target: str) -> None:
    info = tarfile.TarInfo(relative)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    tar.addfile(info)


def capture(sysfs_root: Path, tar: tarfile.TarFile) -> int:
    devices = sysfs_root / "bus" / "pci" / "devices"
    count = 0
    for bus_id in sorted(os.listdir(devices)):
        target = os.readlink(devices / bus_id)
        add_symlink(tar, f"bus/pci/devices/{bus_id}", target)
        real = Path(os.path.normpath(devices / target)).relative_to(sysfs_root)
        for name in PCI_ATTRIBUTE_FILES:
            add_file(tar, sysfs_root, f"{real}/{name}")
        count += 1
    node_dir = sysfs_root / "devices" / "system" / "node"
    for name in sorted(os.listdir(node_dir)) if node_dir.is_dir() else []:
        if name.startswith("node") and name[4:].isdigit():
            add_file(tar, sysfs_root, f"devices/system/node/{name}/cpulist")
    return count


def matrix_text(sysfs_root: Path) -> str:
    # NVML describes this machine: only mix it with the live tree, never with a captured one.
    nvml = NvmlApi()
    nvml_error = nvml.init() if sysfs_root == Path("/sys") else "not used for a captured tree"
    topology = read_topology(sysfs_root=sysfs_root, nvml=None if nvml_error else nvml)
    nvml.shutdown()
    lines = [
        f"xfertop (GPUs from {topology.gpu_source}; {topology.error or 'ok'}; NVML: {nvml_error or 'ok'})"
    ]
    for gpu, row in zip(topology.gpus, topology.links, strict=True):
        lines.append(f"GPU{gpu.index} {gpu.bus_id} node={gpu.numa_node} " + " ".join(f"{x:>5}" for x in row))
    nvidia_smi = shutil.which("nvidia-smi")
    if nvidia_smi:
        run = subprocess.run([nvidia_smi, "topo", "-m"], capture_output=True, text=True, timeout=60)
        lines += ["", "nvidia-smi topo -m:", run.stdout, run.stderr]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--name", default=os.uname().nodename)
    parser.add_argument("--sysfs-root", type=Path, default=Path("/sys"))
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    archive = args.out_dir / f"sysfs_{args.name}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        count = capture(args.sysfs_root, tar)
    (args.out_dir / f"topology_{args.name}.txt").write_text(matrix_text(args.sysfs_root))
    print(f"captured {count} PCI functions into {archive}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
