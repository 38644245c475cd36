"""Parsing what nvidia-smi and sysfs say about the GPU's link (shapes as seen on the H200 probe)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from fakes.fake_pynvml import FakePynvml
from xfertop.bench.link_nvml import open_link_reader
from xfertop.bench.machine import link_facts, parse_replays, parse_smi_csv, sysfs_bus_id
from xfertop.sources.gpu.nvml_api import NvmlApi

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
    assert parse_replays(SMI_Q) == {0: 3}
    before = dataclasses.replace(gpu, replays=1, correctable_errors=None)
    after = dataclasses.replace(gpu, replays=3, correctable_errors=None)
    facts = link_facts(before, gpu, after, "nvidia-smi")
    assert (facts.replay_delta, facts.correctable_delta, facts.gen_max, facts.source) == (
        2,
        None,
        5,
        "nvidia-smi",
    )
    restarted = dataclasses.replace(after, replays=0)
    assert link_facts(before, gpu, restarted, "nvidia-smi").replay_delta is None


def test_nvml_reader_gives_link_pstate_and_both_counters() -> None:
    fake = FakePynvml()
    reader = open_link_reader(NvmlApi(lib=fake))
    assert reader.source == "NVML"
    before = reader.read()[0]
    assert (before.name, before.gen_current, before.width_current, before.gen_gpu_max, before.pstate) == (
        "NVIDIA H200",
        5,
        16,
        5,
        "P0",
    )
    fake.gpus[0].answers["nvmlDeviceGetPcieReplayCounter"] = before.replays + 4
    fake.gpus[0].answers["field_173"] = (before.correctable_errors or 0) + 1
    under_load = reader.read(counters=False)[0]
    assert under_load.replays is None
    facts = link_facts(before, under_load, reader.read()[0], reader.source)
    assert (facts.replay_delta, facts.correctable_delta) == (4, 1)
    assert reader.busy_pids(0) == ()
    fake.gpus[0].processes = [SimpleNamespace(pid=4242, usedGpuMemory=1 << 30)]
    assert reader.busy_pids(0) == (4242,)
    reader.close()


def test_without_nvml_the_reader_falls_back_to_nvidia_smi() -> None:
    reader = open_link_reader(NvmlApi(lib=FakePynvml(init_error="NVML_ERROR_LIBRARY_NOT_FOUND")))
    assert reader.source == "nvidia-smi"


def test_bus_id_to_sysfs() -> None:
    assert sysfs_bus_id("00000000:06:00.0") == "0000:06:00.0"
    assert sysfs_bus_id("00000001:AB:00.0") == "0001:ab:00.0"
