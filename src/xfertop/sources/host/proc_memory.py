"""Pure parsers for the memory files of /proc/<pid>: status, smaps_rollup, smaps, maps, numa_maps.

Text in, numbers in bytes out; no file access here, so every parser is tested on captured text.

The parsers the host source calls on every sample (status) or on big files (maps, smaps) jump to the
lines that hold the names they look for instead of splitting every line; they give what their loop over
``text.splitlines()`` gave (_regions_with says why; the tests compare them with that loop).
docs/host-memory.md says which of these numbers CUDA pinned memory shows up in (measured on an H200:
RssShmem, and per mapping in smaps as "/dev/zero (deleted)").
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_KB = 1024
_NUMA_PAGES = re.compile(r"\bN(\d+)=(\d+)\b")
_PAGE_SIZE_KB = re.compile(r"\bkernelpagesize_kB=(\d+)\b")
_MAPPING_HEADER = re.compile(r"^[0-9a-f]+-[0-9a-f]+\s+\S{4}\s")
#: A mapping's header line starts with its hex start address; every field line ("Rss:", "VmFlags:")
#: starts with an upper-case letter. Checked before the regex so field lines cost one set lookup.
_HEX_DIGITS = frozenset("0123456789abcdef")

#: The NVIDIA driver's control node: every process that has initialised CUDA maps it (measured: 27
#: mappings, 70 MiB on driver 580). A cheap test, from /proc/<pid>/maps, for "this is a CUDA process".
NVIDIA_CONTROL_DEVICE = "/dev/nvidiactl"
#: How the kernel names a MAP_SHARED|MAP_ANONYMOUS mapping (shmem backed by a deleted /dev/zero). On
#: driver 580 cudaHostAlloc, torch's default pinned allocator, maps its buffers this way (H200 probe,
#: docs/host-memory.md); so does any other MAP_SHARED anonymous memory of the process.
CUDA_HOST_ALLOC_PATHNAME = "/dev/zero (deleted)"


@dataclass(frozen=True)
class StatusMemory:
    """The memory lines of /proc/<pid>/status in bytes (None where this kernel prints no such line)."""

    rss_bytes: int | None
    #: VmLck: pages in VM_LOCKED mappings (mlock, mlockall, MAP_LOCKED).
    locked_bytes: int | None
    #: VmPin: mm->pinned_vm, pages long-term pinned by drivers that account them (RDMA, io_uring...).
    pinned_vm_bytes: int | None
    #: RssShmem: resident shared memory (shmem, tmpfs, MAP_SHARED|MAP_ANONYMOUS, memfd).
    shmem_rss_bytes: int | None
    swap_bytes: int | None
    threads: int | None


def parse_kb_fields(text: str) -> dict[str, int]:
    """Every ``Name:   123 kB`` line -> {"Name": 123 * 1024}. Lines without the kB unit are skipped.

    Works for status, smaps_rollup and one mapping's block of smaps."""
    fields: dict[str, int] = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        parts = rest.split()
        if sep and len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
            fields[name.strip()] = int(parts[0]) * _KB
    return fields


def _regions_with(text: str, needle: str, start: int = 0) -> Iterator[tuple[int, list[str]]]:
    """For each stretch of ``text`` between two newlines that contains ``needle``, in order from
    ``start`` (a stretch's first character): (the end of the stretch, its lines as splitlines() splits
    them). Every line of ``text.splitlines()`` that contains ``needle`` is among those lines, since
    splitlines() also splits at every newline: a parser that only needs such lines reads these."""
    if not needle or needle.splitlines() != [needle]:
        # Empty, or holding a line break: no shortcut, every line (none can contain such a needle).
        end = len(text)
        if start < end:
            yield end, text[start:].splitlines()
        return
    while (found := text.find(needle, start)) >= 0:
        begin = text.rfind("\n", start, found) + 1 or start
        end = text.find("\n", found)
        end = len(text) if end < 0 else end
        yield end, text[begin:end].splitlines()
        start = end + 1


def _lines_with(text: str, needle: str) -> Iterator[str]:
    """The lines of ``text.splitlines()`` that contain ``needle``, in order."""
    for _, lines in _regions_with(text, needle):
        yield from (line for line in lines if needle in line)


#: The kB lines of status that parse_status reads, and one pattern that finds them and the Threads line
#: (no name's end is another's start, so one pass finds every occurrence of each).
_STATUS_KB_NAMES = frozenset({"VmRSS", "VmLck", "VmPin", "RssShmem", "VmSwap"})
_STATUS_NAMES = re.compile("|".join([*sorted(_STATUS_KB_NAMES), "Threads:"]))


def parse_status(text: str) -> StatusMemory:
    """As ``parse_kb_fields(text)`` and ``parse_status_value(text, "Threads")`` read it, running their line
    loop over the lines that name a field it keeps (6 of about 60) and skipping the others."""
    fields: dict[str, int] = {}
    threads: str | None = None
    threads_seen = False
    done = 0  # the lines before this offset have been read
    for match in _STATUS_NAMES.finditer(text):
        if match.start() < done:
            continue
        begin = text.rfind("\n", done, match.start()) + 1 or done
        end = text.find("\n", match.end())
        end = len(text) if end < 0 else end
        for line in text[begin:end].splitlines():
            name, sep, rest = line.partition(":")
            key = name.strip()
            if sep and key in _STATUS_KB_NAMES:
                parts = rest.split()
                if len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
                    fields[key] = int(parts[0]) * _KB
            if not threads_seen and line.startswith("Threads:"):
                threads_seen, threads = True, rest.strip()
        done = end + 1
    return StatusMemory(
        rss_bytes=fields.get("VmRSS"),
        locked_bytes=fields.get("VmLck"),
        pinned_vm_bytes=fields.get("VmPin"),
        shmem_rss_bytes=fields.get("RssShmem"),
        swap_bytes=fields.get("VmSwap"),
        threads=int(threads) if threads is not None and threads.isdigit() else None,
    )


def parse_status_value(text: str, name: str) -> str | None:
    """The raw value of the first ``Name:\\tvalue`` line of /proc/<pid>/status, e.g. Cpus_allowed_list."""
    prefix = f"{name}:"
    for line in _lines_with(text, prefix):
        if line.startswith(prefix):
            return line[len(prefix) :].strip()
    return None


def smaps_bytes_by_pathname(text: str) -> dict[str, dict[str, int]]:
    """/proc/<pid>/smaps summed per mapped pathname ("" for anonymous): {pathname: {field: bytes}}.

    Also counts the mappings of each pathname under the key "mappings". Costly on big processes (the
    kernel walks the page tables): for diagnosis and the probe, not for every sample."""
    sums: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in text.splitlines():
        if _MAPPING_HEADER.match(line):
            parts = line.split(maxsplit=5)
            current = sums.setdefault(parts[5].strip() if len(parts) == 6 else "", {"mappings": 0})
            current["mappings"] += 1
            continue
        if current is None:
            continue
        for name, value in parse_kb_fields(line).items():
            current[name] = current.get(name, 0) + value
    return sums


def _mapping_pathname(header: str) -> str:
    """The pathname of a maps/smaps header line ("" for an anonymous mapping)."""
    parts = header.split(maxsplit=5)
    return parts[5].strip() if len(parts) == 6 else ""


def _is_mapping_header(line: str) -> bool:
    return bool(line) and line[0] in _HEX_DIGITS and _MAPPING_HEADER.match(line) is not None


def maps_has_pathname(text: str, pathname: str) -> bool:
    """Whether /proc/<pid>/maps (or smaps) maps ``pathname`` at least once. maps is cheap to read (0.5 ms
    for a torch process on the H200, no page-table walk), so this is the test before reading smaps."""
    return any(
        _is_mapping_header(line) and _mapping_pathname(line) == pathname
        for line in _lines_with(text, pathname)
    )


def smaps_rss_bytes(text: str, pathname: str) -> tuple[int, int]:
    """(summed Rss in bytes, number of mappings) of every mapping of ``pathname`` in /proc/<pid>/smaps.

    Reads only the header and the Rss line of each block, unlike smaps_bytes_by_pathname; outside such
    blocks it jumps to the next line that holds ``pathname`` (a torch process has ~10,000 smaps lines,
    a few dozen of them in "/dev/zero (deleted)" blocks)."""
    rss = mappings = 0
    inside = False
    start = 0
    while start < len(text):
        if inside:  # every line of the block, up to the next mapping's header
            end = text.find("\n", start)
            end = len(text) if end < 0 else end
            lines = text[start:end].splitlines()
        else:  # only a line that holds the pathname can open a block of that pathname
            region = next(_regions_with(text, pathname, start), None)
            if region is None:
                break
            end, lines = region
        for line in lines:
            if _is_mapping_header(line):
                inside = _mapping_pathname(line) == pathname
                mappings += inside
            elif inside and line.startswith("Rss:"):
                parts = line.split()
                if len(parts) == 3 and parts[2] == "kB" and parts[1].isdigit():
                    rss += int(parts[1]) * _KB
        start = end + 1
    return rss, mappings


def cuda_host_alloc_bytes(smaps_text: str) -> int:
    """Resident bytes of the "/dev/zero (deleted)" mappings in /proc/<pid>/smaps. Only meaningful for a
    process that maps /dev/nvidiactl (``maps_has_pathname(maps, NVIDIA_CONTROL_DEVICE)``): elsewhere that
    memory is no CUDA's.

    What it counts, measured on the H200 (driver 580, torch 2.11): the driver's own 10 MiB after CUDA
    init (5 mappings), plus every cudaHostAlloc buffer (1 GiB pin_memory() -> 1034 MiB in 6 mappings),
    including blocks torch's caching host allocator keeps after the tensor is freed; also any other
    MAP_SHARED|MAP_ANONYMOUS memory of the process. Blind to cudaHostRegister (torch's
    pinned_use_cuda_host_register), which pins plain anonymous memory."""
    return smaps_rss_bytes(smaps_text, CUDA_HOST_ALLOC_PATHNAME)[0]


def parse_numa_maps_bytes_by_node(text: str) -> dict[int, int]:
    """Resident bytes per NUMA node from /proc/<pid>/numa_maps (``N<node>=<pages>`` times the page size)."""
    by_node: dict[int, int] = {}
    for line in text.splitlines():
        page_kb = _PAGE_SIZE_KB.search(line)
        page_bytes = int(page_kb.group(1)) * _KB if page_kb else 4 * _KB
        for node, pages in _NUMA_PAGES.findall(line):
            by_node[int(node)] = by_node.get(int(node), 0) + int(pages) * page_bytes
    return by_node
