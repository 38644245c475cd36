"""What a link can carry, how a rate reads against it, and when a slow link is a fault."""

from __future__ import annotations

import pytest

from xfertop.analysis.pcie_link import link_bytes_per_s, link_warning, slot_cap_note, throughput_label
from xfertop.model.gpu import PcieLink

GEN5_X16 = PcieLink(gen_current=5, width_current=16, gen_max=5, width_max=16, gen_gpu_max=5)


@pytest.mark.parametrize(
    ("gen", "width", "gb_per_s"),
    [
        (1, 1, 0.25),  # 2.5 GT/s, 8b/10b
        (2, 16, 8.0),
        (3, 16, 15.75),  # 8 GT/s, 128b/130b
        (4, 8, 15.75),
        (5, 16, 63.02),
        (6, 16, 121.0),  # 64 GT/s, FLIT: 242 of 256 bytes
    ],
)
def test_theoretical_rate_per_direction(gen: int, width: int, gb_per_s: float) -> None:
    assert link_bytes_per_s(gen, width) == pytest.approx(gb_per_s * 1e9, rel=1e-3)


def test_unknown_links_have_no_capacity() -> None:
    assert link_bytes_per_s(None, 16) is None
    assert link_bytes_per_s(7, 16) is None
    assert link_bytes_per_s(5, None) is None


def test_label_reads_rate_of_capacity() -> None:
    assert throughput_label("RX", 54.9e9, 5, 16) == "RX 54.9 GB/s of 63.0 (Gen5 x16)"
    assert throughput_label("TX", 5.2e9, None, 16) == "TX 5.2 GB/s"
    assert throughput_label("RX", None, 5, 16) == "RX n/a"


def test_an_idle_link_that_downclocked_is_not_a_fault() -> None:
    idle = PcieLink(gen_current=1, width_current=16, gen_max=5, width_max=16, gen_gpu_max=5)
    assert link_warning(idle, rx_bytes_per_s=3e6, tx_bytes_per_s=4e6) is None
    assert link_warning(idle, rx_bytes_per_s=None, tx_bytes_per_s=None) is None


def test_a_full_speed_link_under_load_is_fine() -> None:
    assert link_warning(GEN5_X16, rx_bytes_per_s=59e9, tx_bytes_per_s=5e9) is None


def test_a_slow_generation_under_load_is_named_with_what_it_could_be() -> None:
    slow = PcieLink(gen_current=3, width_current=16, gen_max=5, width_max=16, gen_gpu_max=5)
    warning = link_warning(slow, rx_bytes_per_s=12e9, tx_bytes_per_s=1e9)
    assert warning == (
        "PCIe link runs at Gen3 x16 while moving 12.0 GB/s, below the Gen5 x16 it can "
        "reach: check the slot, riser or BIOS PCIe setting"
    )


def test_a_narrow_link_under_load_is_named() -> None:
    narrow = PcieLink(gen_current=5, width_current=8, gen_max=5, width_max=16, gen_gpu_max=5)
    warning = link_warning(narrow, rx_bytes_per_s=None, tx_bytes_per_s=25e9)
    assert warning is not None and "Gen5 x8" in warning and "Gen5 x16" in warning and "seating" in warning


def test_a_slot_cap_is_a_note_not_a_runtime_warning() -> None:
    capped = PcieLink(gen_current=4, width_current=16, gen_max=4, width_max=16, gen_gpu_max=5)
    assert link_warning(capped, rx_bytes_per_s=25e9, tx_bytes_per_s=0) is None
    assert slot_cap_note(capped) == (
        "the host slot caps this GPU at Gen4 (the GPU supports Gen5): at most 31.5 GB/s per direction"
    )
    assert slot_cap_note(GEN5_X16) is None


def test_a_slot_cap_at_a_generation_without_a_rate_is_a_note_without_a_figure() -> None:
    unknown = PcieLink(gen_current=0, width_current=16, gen_max=0, width_max=16, gen_gpu_max=5)
    assert slot_cap_note(unknown) == "the host slot caps this GPU at Gen0 (the GPU supports Gen5)"
