"""Parsing what nvidia-smi and sysfs say about the GPU's link (shapes as seen on the H200 probe)."""

from __future__ import annotations

from xfertop.bench.machine import link_facts, parse_replays, parse_smi_csv, sysfs_bus_id

H200_CSV = "0, NVIDIA H200, 00000000:06:00.0, 580.159.04, 5, 5, 5, 16, 16, P0\n"
SMI_Q = """
    PCI
        Bus                               : 0x06
        Replays Since Reset               : 3
        Replay Number Rollovers           : 0
"""


def test_link_fields_parse_with_n_a_as_unknown() -> None:
    gpu = parse_smi_csv(H200_CSV)[0]
    assert (gpu.index, gpu.name, gpu.gen_current, gpu.gen_gpu_max, gpu.width_current, gpu.pstate) == (
        0,
        "NVIDIA H200",
        5,
        5,
        16,
        "P0",
    )
    unknown = parse_smi_csv("1, GPU, 00000000:07:00.0, 580, [N/A], 4, [N/A], 16, 16, P8")[0]
    assert (unknown.gen_current, unknown.gen_gpu_max, unknown.gen_max) == (None, None, 4)
    assert parse_smi_csv("garbage line") == []


def test_replay_delta_across_the_run() -> None:
    gpu = parse_smi_csv(H200_CSV)[0]
    after = parse_replays(SMI_Q)
    assert after == {0: 3}
    facts = link_facts(gpu, {0: 1}, after)
    assert (facts.replay_delta, facts.correctable_delta, facts.gen_max) == (2, None, 5)
    assert link_facts(gpu, {}, after).replay_delta is None


def test_bus_id_to_sysfs() -> None:
    assert sysfs_bus_id("00000000:06:00.0") == "0000:06:00.0"
    assert sysfs_bus_id("00000001:AB:00.0") == "0001:ab:00.0"
