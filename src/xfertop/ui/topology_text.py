"""The topology screen's sections as Rich Text: warnings, GPU-to-GPU matrix, PCIe paths, placement.

Pure rendering from one Topology snapshot (plus the placement warnings), so tests can read it as text.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from xfertop.analysis.placement import PlacementWarning, cpu_ranges
from xfertop.model.topology import GpuTopology, PcieHop, ProcessPlacement, Topology
from xfertop.ui.format import NA, human_bytes

#: Colours of the matrix cells: NVLink best, then one switch, ..., across sockets worst.
LINK_STYLES = {"X": "dim", "PIX": "green", "PXB": "cyan", "PHB": "yellow", "NODE": "yellow", "SYS": "red"}
LEGEND = (
    "X itself  NV# NVLinks  PIX one switch  PXB several switches  PHB via the CPU  "
    "NODE same NUMA node  SYS across sockets"
)
_CELL = 5


def _cell_style(link: str) -> str:
    return "bold green" if link.startswith("NV") else LINK_STYLES.get(link, "")


def _nodes_of(cpus: Sequence[int], numa_cpus: dict[int, tuple[int, ...]]) -> tuple[int, ...]:
    wanted = set(cpus)
    return tuple(node for node, node_cpus in sorted(numa_cpus.items()) if wanted & set(node_cpus))


def _nodes_word(nodes: Sequence[int]) -> str:
    if not nodes:
        return "node ?"
    return ("node " if len(nodes) == 1 else "nodes ") + ",".join(map(str, nodes))


def _gpu_node(gpu: GpuTopology) -> str:
    return "?" if gpu.numa_node is None else str(gpu.numa_node)


def _count(number: int, noun: str, plural: str = "s") -> str:
    return f"{number} {noun}{plural if number != 1 else ''}"


def summary_text(topology: Topology | None, warnings: Sequence[PlacementWarning]) -> Text:
    """One line of what was found, then each warning in words (or that there is none)."""
    if topology is None:
        return Text("reading the topology (sysfs, /proc, NVML) ...", style="dim")
    nodes = len(topology.numa_cpus)
    text = Text(
        f"{_count(len(topology.gpus), 'GPU')} (from {topology.gpu_source}), "
        f"{_count(nodes, 'NUMA node')}, {_count(len(topology.processes), 'process', 'es')} placed",
        style="bold",
    )
    if topology.error:
        text.append(f"\n{topology.error}", style="yellow")
    for warning in warnings:
        text.append("\n⚠ ", style="bold yellow")
        text.append(warning.message, style="yellow")
    if not warnings and topology.gpus:
        text.append("\nno placement problems found", style="green")
    return text


def matrix_text(topology: Topology) -> Text:
    """The GPU-to-GPU matrix of `nvidia-smi topo -m`, with each GPU's NUMA node and local CPUs."""
    gpus = topology.gpus
    text = Text("GPU-to-GPU", style="bold")
    if not gpus:
        return text.append("  no GPUs", style="dim")
    text.append(
        "\n" + " " * 6 + "".join(f"GPU{g.index}".ljust(_CELL) for g in gpus) + " NUMA  LOCAL CPUs",
        style="bold",
    )
    for gpu, row in zip(gpus, topology.links, strict=False):
        text.append(f"\nGPU{gpu.index}".ljust(7), style="bold")
        for link in row:
            text.append(link.ljust(_CELL), style=_cell_style(link))
        source = "" if gpu.numa_source != "nvml" else " (NVML)"
        text.append(f" {_gpu_node(gpu):>4}{source}  {cpu_ranges(list(gpu.local_cpus)) or NA}")
    text.append("\n" + LEGEND, style="dim")
    return text


def _hop_link(hop: PcieHop) -> Text:
    now = f"Gen{hop.link_gen_current or '?'}x{hop.link_width_current or '?'}"
    best = f"Gen{hop.link_gen_max or '?'}x{hop.link_width_max or '?'}"
    if hop.link_gen_current is None and hop.link_width_current is None:
        return Text("no link info", style="dim")
    if now == best:
        return Text(now)
    return Text(f"{now} of {best}", style="bold yellow")


def _short_bus(bus_id: str) -> str:
    return bus_id[5:] if bus_id.startswith("0000:") else bus_id


def path_text(topology: Topology) -> Text:
    """Each GPU's PCIe path, GPU first, up to the root port: bus id and link (now, and max when lower)."""
    text = Text("PCIe paths", style="bold")
    text.append(
        '  GPU › switch ports › root port, each hop\'s link now ("of" its max when lower)', style="dim"
    )
    for gpu in topology.gpus:
        text.append(f"\nGPU{gpu.index} ", style="bold")
        if not gpu.pcie_path:
            text.append(gpu.error or "path unknown", style="yellow")
            continue
        for position, hop in enumerate(gpu.pcie_path):
            if position:
                text.append(" › ", style="dim")
            text.append(_short_bus(hop.bus_id) + " ")
            text.append_text(_hop_link(hop))
    return text


def _memory(process: ProcessPlacement) -> str:
    memory = process.memory_bytes_by_node
    if memory is None:
        return "memory by node unknown"
    total = sum(memory.values())
    if not total:
        return "no resident memory"
    return "memory " + " ".join(f"n{node} {human_bytes(size)}" for node, size in sorted(memory.items()))


def _worker_lines(process: ProcessPlacement, topology: Topology) -> list[Text]:
    """Workers grouped by CPU affinity: one line per distinct affinity."""
    groups: dict[tuple[int, ...], list[ProcessPlacement]] = {}
    for worker in process.workers:
        groups.setdefault(worker.allowed_cpus, []).append(worker)
    lines = []
    for allowed, workers in groups.items():
        ran = sorted({node for w in workers for node in w.running_nodes})
        pids = ",".join(str(w.pid) for w in workers)
        lines.append(
            Text(
                f"    {len(workers)} worker{'s' if len(workers) != 1 else ''} ({pids}): "
                f"allowed CPUs {cpu_ranges(list(allowed)) or NA} "
                f"({_nodes_word(_nodes_of(allowed, topology.numa_cpus))}), ran on "
                f"{_nodes_word(ran)}"
            )
        )
    return lines


def _process_line(process: ProcessPlacement, topology: Topology) -> Text:
    gpu = next((g for g in topology.gpus if g.bus_id == process.gpu_bus_id), None)
    who = f"rank {process.rank}" if process.rank is not None else (process.name or "process")
    text = Text(f"{who:<8} pid {process.pid:<7}", style="bold")
    if process.error and not process.allowed_cpus:
        return text.append(process.error, style="yellow")
    target = f"GPU{gpu.index} (node {_gpu_node(gpu)})" if gpu else "GPU ?"
    ran = _nodes_word(process.running_nodes)
    local = gpu is not None and gpu.numa_node is not None and gpu.numa_node in process.running_nodes
    text.append(f"{target:<14} runs on CPUs {cpu_ranges(list(process.running_cpus)) or NA} ")
    text.append(f"({ran})", style="green" if local or gpu is None else "bold yellow")
    text.append(f"  allowed {cpu_ranges(list(process.allowed_cpus)) or NA}  {_memory(process)}")
    return text


def placement_text(topology: Topology) -> Text:
    """Each GPU process and training rank: its GPU and that GPU's node, where it runs, what it may use,
    where its memory is; then its DataLoader workers grouped by affinity."""
    text = Text("processes", style="bold")
    text.append("  where each rank and its workers run, against its GPU's NUMA node", style="dim")
    if not topology.processes:
        return text.append("\nno GPU processes or training ranks to place", style="dim")
    for process in topology.processes:
        text.append("\n")
        text.append_text(_process_line(process, topology))
        for line in _worker_lines(process, topology):
            text.append("\n")
            text.append_text(line)
    return text
