"""What a PCIe link can carry, labels against it, and whether a link runs below what it could.

Per direction, after line encoding, before packet headers: NVML's byte counters include headers, so
a healthy Gen5 x16 link moving 55 GB/s of payload reads ~59 GB/s against 63.0 GB/s here.
"""

from __future__ import annotations

from xfertop.model.gpu import GpuState, PcieLink

#: Transfer rate per lane, gigatransfers per second (one bit per lane per transfer).
GT_PER_S_BY_GEN = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}

#: Share of the raw bits that carry data. Gen1/2: 8b/10b. Gen3-5: 128b/130b. Gen6 (PAM4, FLIT mode,
#: no line encoding): of each 256-byte FLIT, 242 bytes carry TLPs (the rest is DLP, CRC and FEC).
ENCODING_EFFICIENCY_BY_GEN = {1: 8 / 10, 2: 8 / 10, 3: 128 / 130, 4: 128 / 130, 5: 128 / 130, 6: 242 / 256}

#: Below this much traffic a link may rightly sit at a low speed to save power.
BUSY_BYTES_PER_S = 1e9


def gpus_under_load(state: GpuState | None, busy_bytes_per_s: float = BUSY_BYTES_PER_S) -> set[int]:
    """Indices of the GPUs moving at least ``busy_bytes_per_s`` in either direction now: the ones whose
    slow links are worth a warning (placement_warnings)."""
    loaded = set()
    for gpu in state.gpus if state is not None else ():
        if max(gpu.pcie.rx_bytes_per_s or 0.0, gpu.pcie.tx_bytes_per_s or 0.0) >= busy_bytes_per_s:
            loaded.add(gpu.index)
    return loaded


def link_bytes_per_s(gen: int | None, width: int | None) -> float | None:
    """Theoretical bytes/s per direction (Gen5 x16: 63.0e9); None if gen or width is unknown."""
    if gen not in GT_PER_S_BY_GEN or not width:
        return None
    return GT_PER_S_BY_GEN[gen] * 1e9 * width / 8 * ENCODING_EFFICIENCY_BY_GEN[gen]


def link_name(gen: int | None, width: int | None) -> str:
    """ "Gen5 x16", with "?" for what is unknown."""
    return f"Gen{gen if gen else '?'} x{width if width else '?'}"


def throughput_label(direction: str, bytes_per_s: float | None, gen: int | None, width: int | None) -> str:
    """ "RX 54.9 GB/s of 63.0 (Gen5 x16)"; "RX n/a" when there is no figure."""
    if bytes_per_s is None:
        return f"{direction} n/a"
    capacity = link_bytes_per_s(gen, width)
    rate = f"{direction} {bytes_per_s / 1e9:.1f} GB/s"
    if capacity is None:
        return rate
    return f"{rate} of {capacity / 1e9:.1f} ({link_name(gen, width)})"


def link_warning(
    link: PcieLink,
    rx_bytes_per_s: float | None,
    tx_bytes_per_s: float | None,
    busy_bytes_per_s: float = BUSY_BYTES_PER_S,
) -> str | None:
    """A sentence when the link runs below its maximum generation or width while traffic flows.

    An idle link that downclocks saves power and is no fault, so without traffic this says nothing.
    """
    traffic = max(rx_bytes_per_s or 0.0, tx_bytes_per_s or 0.0)
    if traffic < busy_bytes_per_s or link.gen_current is None or link.width_current is None:
        return None
    # The host-capped maximum: a Gen4 slot holding a Gen5 GPU is slot_cap_note's business, not a fault.
    gen_max = link.gen_max if link.gen_max is not None else link.gen_gpu_max
    slow_gen = gen_max is not None and link.gen_current < gen_max
    narrow = link.width_max is not None and link.width_current < link.width_max
    if not slow_gen and not narrow:
        return None
    current = link_name(link.gen_current, link.width_current)
    best = link_name(
        gen_max if slow_gen else link.gen_current, link.width_max if narrow else link.width_current
    )
    cause = "the slot, riser or BIOS PCIe setting" if slow_gen else "the slot's wiring or seating"
    return (
        f"PCIe link runs at {current} while moving {traffic / 1e9:.1f} GB/s, below the {best} "
        f"it can reach: check {cause}"
    )


def slot_cap_note(link: PcieLink) -> str | None:
    """A sentence when the host caps the link below what the GPU supports (true even when idle)."""
    if link.gen_max is None or link.gen_gpu_max is None or link.gen_max >= link.gen_gpu_max:
        return None
    note = f"the host slot caps this GPU at Gen{link.gen_max} (the GPU supports Gen{link.gen_gpu_max})"
    capacity = link_bytes_per_s(link.gen_max, link.width_max or 16)
    if capacity is None:  # a generation GT_PER_S_BY_GEN does not know: no figure
        return note
    return f"{note}: at most {capacity / 1e9:.1f} GB/s per direction"
