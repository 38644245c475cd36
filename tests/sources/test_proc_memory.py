"""Parsing /proc memory files, on text captured from real processes (tests/fixtures/proc_text, h200)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from xfertop.sources.host.proc_memory import (
    CUDA_HOST_ALLOC_PATHNAME,
    NVIDIA_CONTROL_DEVICE,
    StatusMemory,
    _is_mapping_header,
    _mapping_pathname,
    cuda_host_alloc_bytes,
    maps_has_pathname,
    parse_kb_fields,
    parse_numa_maps_bytes_by_node,
    parse_status,
    parse_status_value,
    smaps_bytes_by_pathname,
    smaps_rss_bytes,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TEXT = FIXTURES / "proc_text"
MEASURED = Path(__file__).resolve().parents[2] / "docs" / "measurements" / "h200-2026-11-29"
MIB = 1 << 20


def test_status_of_a_process_with_1MiB_mlocked_and_9MiB_shared() -> None:
    # Captured from python with mmap(-1, 1 MiB) mlock()ed and mmap(-1, 8 MiB, MAP_SHARED) touched; Python's
    # mmap is MAP_SHARED by default, so both count as shared memory.
    memory = parse_status((TEXT / "mlock_1MiB_shared_8MiB.status").read_text())
    assert memory.locked_bytes == 1 * MIB
    assert memory.pinned_vm_bytes == 0
    assert memory.shmem_rss_bytes == 9 * MIB
    assert memory.rss_bytes is not None and memory.rss_bytes > 9 * MIB
    assert memory.threads == 1


def test_status_value_reads_the_affinity_line() -> None:
    text = (TEXT / "mlock_1MiB_shared_8MiB.status").read_text()
    assert parse_status_value(text, "Cpus_allowed_list") == "0-1"
    assert parse_status_value(text, "NoSuchLine") is None


def test_status_from_an_older_kernel_without_vmpin_gives_none() -> None:
    memory = parse_status("Name:\tx\nVmLck:\t       0 kB\nVmRSS:\t     100 kB\nThreads:\t3\n")
    assert memory.pinned_vm_bytes is None and memory.shmem_rss_bytes is None
    assert memory.rss_bytes == 100 * 1024 and memory.threads == 3


def test_smaps_rollup_fields_are_bytes() -> None:
    fields = parse_kb_fields((TEXT / "mlock_1MiB_shared_8MiB.smaps_rollup").read_text())
    assert fields["Locked"] == 1 * MIB
    assert fields["Pss_Shmem"] == 9 * MIB
    assert "[rollup]" not in fields


def test_smaps_sums_per_pathname_and_keeps_the_locked_mapping_apart() -> None:
    by_path = smaps_bytes_by_pathname((TEXT / "mlock_1MiB_shared_8MiB.smaps").read_text())
    shared = by_path["/dev/zero (deleted)"]
    assert shared["mappings"] == 2
    assert shared["Rss"] == 9 * MIB
    assert shared["Locked"] == 1 * MIB
    assert shared["Anonymous"] == 0  # shared memory is not "anonymous" to smaps


def test_h200_cuda_pinned_gigabyte_shows_as_shmem_and_not_as_locked() -> None:
    """The recorded finding behind docs/host-memory.md: 1 GiB pin_memory() on driver 580."""
    probe = json.loads((FIXTURES / "h200" / "nvml_probe.json").read_text())
    before = parse_kb_fields(probe["proc_after_cuda_init"]["smaps_rollup"])
    after = parse_kb_fields(probe["proc_after_1GiB_pinned"]["smaps_rollup"])
    assert after["Pss_Shmem"] - before["Pss_Shmem"] == 1 << 30
    assert after["Locked"] == before["Locked"] == 0
    status_before = _status_from_probe(probe["proc_after_cuda_init"]["status"])
    status_after = _status_from_probe(probe["proc_after_1GiB_pinned"]["status"])
    assert status_after.shmem_rss_bytes == status_before.shmem_rss_bytes + (1 << 30)  # type: ignore[operator]
    assert status_after.locked_bytes == 0 and status_after.pinned_vm_bytes == 0
    # The driver's own /dev/nvidiactl mappings did not grow: the buffer is not mapped through it.
    assert (
        probe["smaps_after_1GiB_pinned"]["/dev/nvidiactl"]["Rss"]
        == probe["smaps_after_cuda_init"]["/dev/nvidiactl"]["Rss"]
    )


def _status_from_probe(lines: dict[str, str]) -> StatusMemory:
    """The probe kept the Vm*/Rss* lines of /proc/self/status as a dict: put the text back together."""
    return parse_status("\n".join(f"{name}:\t{value}" for name, value in lines.items()))


def test_numa_maps_counts_pages_per_node_times_page_size() -> None:
    by_node = parse_numa_maps_bytes_by_node((TEXT / "python_single_node.numa_maps").read_text())
    assert list(by_node) == [0] and by_node[0] > 0 and by_node[0] % 4096 == 0
    huge = (
        "7f00 default anon=2 dirty=2 N0=1 N1=1 kernelpagesize_kB=2048\n"
        "7f10 default anon=3 N1=3 kernelpagesize_kB=4"
    )
    assert parse_numa_maps_bytes_by_node(huge) == {0: 2 * MIB, 1: 2 * MIB + 3 * 4096}


# The h200_*.smaps fixtures are RECONSTRUCTED from the H200 probe's per-pathname sums and its recorded
# large mappings (tests/fixtures/make_h200_pinned_smaps.py says exactly how): the "/dev/zero (deleted)"
# mappings mirror the probe (count and sums, the 1 GiB block verbatim); other pathnames are condensed.


def _maps_of(smaps_text: str) -> str:
    """/proc/<pid>/maps is the header lines of smaps."""
    return "\n".join(line for line in smaps_text.splitlines() if not line[:1].isupper())


def _probe_sum(mode: str, label: str, pathname: str) -> dict[str, int]:
    probe = json.loads((MEASURED / f"proc_pinned_host_{mode}.json").read_text())
    step = next(s for s in probe["steps"] if s["label"] == label)
    return step["smaps_by_pathname"][pathname]


def test_reconstructed_fixtures_carry_the_probes_dev_zero_sums() -> None:
    for mode, label, name in (
        ("alloc", "after_cuda_init", "h200_host_alloc_after_cuda_init"),
        ("alloc", "after_1GiB_pinned", "h200_host_alloc_after_1GiB_pinned"),
        ("register", "after_1GiB_pinned", "h200_host_register_after_1GiB_pinned"),
    ):
        by_path = smaps_bytes_by_pathname((TEXT / f"{name}.smaps").read_text())
        recorded = _probe_sum(mode, label, CUDA_HOST_ALLOC_PATHNAME)
        assert by_path[CUDA_HOST_ALLOC_PATHNAME]["mappings"] == recorded["mappings"], name
        assert by_path[CUDA_HOST_ALLOC_PATHNAME]["Rss"] == recorded["Rss"], name


def test_cuda_init_leaves_10MiB_of_the_drivers_own_in_five_dev_zero_mappings() -> None:
    smaps = (TEXT / "h200_host_alloc_after_cuda_init.smaps").read_text()
    assert maps_has_pathname(_maps_of(smaps), NVIDIA_CONTROL_DEVICE)
    assert smaps_rss_bytes(smaps, CUDA_HOST_ALLOC_PATHNAME) == (10 * MIB, 5)
    assert cuda_host_alloc_bytes(smaps) == 10 * MIB


def test_one_GiB_of_cudaHostAlloc_pin_memory_adds_one_GiB_in_a_sixth_dev_zero_mapping() -> None:
    smaps = (TEXT / "h200_host_alloc_after_1GiB_pinned.smaps").read_text()
    assert smaps_rss_bytes(smaps, CUDA_HOST_ALLOC_PATHNAME) == (1034 * MIB, 6)
    before = cuda_host_alloc_bytes((TEXT / "h200_host_alloc_after_cuda_init.smaps").read_text())
    assert cuda_host_alloc_bytes(smaps) - before == 1 << 30
    # The driver's control node did not grow: the buffer is not mapped through it.
    assert (
        smaps_rss_bytes(smaps, NVIDIA_CONTROL_DEVICE)[0]
        == _probe_sum("alloc", "after_cuda_init", NVIDIA_CONTROL_DEVICE)["Rss"]
    )


def test_cudaHostRegister_pinned_memory_is_invisible_to_the_figure() -> None:
    """pinned_use_cuda_host_register:True: 1 GiB pinned lands in plain anonymous memory."""
    smaps = (TEXT / "h200_host_register_after_1GiB_pinned.smaps").read_text()
    assert cuda_host_alloc_bytes(smaps) == 10 * MIB, "only the driver's own, as after CUDA init"
    anonymous = smaps_bytes_by_pathname(smaps)[""]["Rss"]
    before = _probe_sum("register", "after_cuda_init", "")["Rss"]
    assert anonymous - before > 1 << 30


def test_a_process_without_nvidiactl_is_not_a_cuda_process() -> None:
    # Captured from plain python with 9 MiB of MAP_SHARED memory: "/dev/zero (deleted)", but no CUDA.
    smaps = (TEXT / "mlock_1MiB_shared_8MiB.smaps").read_text()
    assert smaps_rss_bytes(smaps, CUDA_HOST_ALLOC_PATHNAME) == (9 * MIB, 2)
    assert not maps_has_pathname(_maps_of(smaps), NVIDIA_CONTROL_DEVICE)


def test_maps_pathnames_match_whole_names_only() -> None:
    maps = (
        "7ff000000000-7ff001756000 rw-s 00000000 00:06 1049                       /dev/nvidiactl-old\n"
        "7feaaaa00000-7feacaa00000 rw-p 00000000 00:00 0 \n"
        "7ff0054e0000-7ff0277cb000 rw-p 00000000 00:00 0                          [heap]\n"
    )
    assert not maps_has_pathname(maps, NVIDIA_CONTROL_DEVICE)
    assert maps_has_pathname(maps, "[heap]") and maps_has_pathname(maps, "")
    assert not maps_has_pathname("", NVIDIA_CONTROL_DEVICE)


# The parsers that jump to the lines holding a name (parse_status, parse_status_value, maps_has_pathname,
# smaps_rss_bytes) against the line-by-line loops they replaced, kept here verbatim as the reference.


def _reference_status(text: str) -> StatusMemory:
    fields = parse_kb_fields(text)
    threads = _reference_status_value(text, "Threads")
    return StatusMemory(
        rss_bytes=fields.get("VmRSS"),
        locked_bytes=fields.get("VmLck"),
        pinned_vm_bytes=fields.get("VmPin"),
        shmem_rss_bytes=fields.get("RssShmem"),
        swap_bytes=fields.get("VmSwap"),
        threads=int(threads) if threads is not None and threads.isdigit() else None,
    )


def _reference_status_value(text: str, name: str) -> str | None:
    prefix = f"{name}:"
    for line in text.splitlines():
        if line.startswith(prefix):
            return line[len(prefix) :].strip()
    return None


def _reference_has_pathname(text: str, pathname: str) -> bool:
    return any(_is_mapping_header(line) and _mapping_pathname(line) == pathname for line in text.splitlines())


def _reference_smaps_rss(text: str, pathname: str) -> tuple[int, int]:
    rss = mappings = 0
    inside = False
    for line in text.splitlines():
        if _is_mapping_header(line):
            inside = _mapping_pathname(line) == pathname
            mappings += inside
        elif inside and line.startswith("Rss:"):
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB" and parts[1].isdigit():
                rss += int(parts[1]) * 1024
    return rss, mappings


ODD_SMAPS = (
    "7f00-7f10 rw-s 00000000 00:01 5 /dev/zero (deleted)\n"
    "Size:                 64 kB\nRss:                  16 kB\n"
    "7f10-7f20 rw-s 00000000 00:01 6 /dev/zero (deleted)\r\n"  # two blocks in a row, a CRLF line end
    "Rss:                   8 kB\nRss: 4 kB\n"  # a second Rss line is summed as the loop did
    "7f20-7f30 rw-p 00000000 00:00 0 \n"
    "Rss:                 100 kB\n"  # anonymous: not ours
    "7f30-7f40 rw-s 00000000 00:01 7 /tmp/x /dev/zero (deleted)\n"  # the name inside another one
    "Rss:                 200 kB\n"
    "Rss: mentions /dev/zero (deleted) 1 kB\n"  # the name on a field line, outside a block of it
    "7f40-7f50 rw-s 00000000 00:01 8 /dev/zero (deleted)\x0bRss: 2 kB\n"  # splitlines splits at \x0b too
    "Rss:                  32 kB"  # no newline at the end
)


@pytest.mark.parametrize(
    "pathname",
    [
        "/dev/zero (deleted)",
        "/dev/zero",
        "",
        "[heap]",
        "/nowhere",
        "/tmp/x /dev/zero (deleted)",
        "Rss:",
        "a\nb",
    ],
)
def test_smaps_and_maps_jumps_give_what_the_line_loop_gave(pathname: str) -> None:
    texts = [ODD_SMAPS] + [
        (TEXT / name).read_text()
        for name in (
            "h200_host_alloc_after_1GiB_pinned.smaps",
            "h200_host_register_after_1GiB_pinned.smaps",
            "mlock_1MiB_shared_8MiB.smaps",
        )
    ]
    texts.append(Path(f"/proc/{os.getpid()}/smaps").read_text())
    for text in texts:
        assert smaps_rss_bytes(text, pathname) == _reference_smaps_rss(text, pathname), pathname
        assert maps_has_pathname(text, pathname) == _reference_has_pathname(text, pathname), pathname
        maps = _maps_of(text)
        assert maps_has_pathname(maps, pathname) == _reference_has_pathname(maps, pathname), pathname


def test_the_odd_smaps_sums_two_dev_zero_blocks_and_the_one_after_a_vertical_tab() -> None:
    assert smaps_rss_bytes(ODD_SMAPS, CUDA_HOST_ALLOC_PATHNAME) == ((16 + 8 + 4 + 2 + 32) * 1024, 3)
    assert smaps_rss_bytes(ODD_SMAPS, "") == (100 * 1024, 1)


ODD_STATUS = (
    "Name:\tVmRSS: 1 kB\n"  # a process may call itself anything
    "  VmLck:\t      4 kB\n"  # leading blanks: the loop stripped the name
    "VmRSS:\t   100 kB\n"
    "VmRSS:\t   200 kB\n"  # the last one wins, as in the loop
    "VmPin:\t   x kB\n"  # not a number: no figure
    "Threads:\tmany\n"  # the first Threads line decides, even when it is not a number
    "Threads:\t3\n"
    "RssShmem:\t 8 kB\rVmSwap:\t 16 kB\n"  # a carriage return is a line break to splitlines
    "Cpus_allowed_list:\t0-3"
)


def test_status_jumps_give_what_the_line_loop_gave() -> None:
    texts = [
        ODD_STATUS,
        "",
        "Threads:\t7",
        (TEXT / "mlock_1MiB_shared_8MiB.status").read_text(),
        Path(f"/proc/{os.getpid()}/status").read_text(),
    ]
    for text in texts:
        assert parse_status(text) == _reference_status(text)
        for name in ("Threads", "Cpus_allowed_list", "Name", "VmRSS", "Nope", ""):
            assert parse_status_value(text, name) == _reference_status_value(text, name), (text, name)
    odd = parse_status(ODD_STATUS)
    assert odd == StatusMemory(
        rss_bytes=200 * 1024,
        locked_bytes=4 * 1024,
        pinned_vm_bytes=None,
        shmem_rss_bytes=8 * 1024,
        swap_bytes=16 * 1024,
        threads=None,
    )
