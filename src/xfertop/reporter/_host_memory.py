"""Pinned host memory held by PyTorch's caching host allocator, read defensively."""

from __future__ import annotations

import sys


def pinned_host_bytes() -> tuple[int, int] | None:
    """(pool bytes incl. cached, active bytes or -1), or None when CUDA is not in use here.

    Keys changed across releases (``allocated_bytes.current`` in all; ``active_bytes.current`` only in
    newer ones), so each is looked up on its own and a missing one reads as unknown.
    """
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return None
    stats_fn = getattr(torch.cuda, "host_memory_stats", None)
    if stats_fn is None:
        return None
    stats = stats_fn()
    pool = stats.get("allocated_bytes.current", stats.get("reserved_bytes.current"))
    if not isinstance(pool, int):
        return None
    active = stats.get("active_bytes.current", -1)
    return pool, active if isinstance(active, int) else -1
