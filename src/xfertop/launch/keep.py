"""What the launchers keep of a run beside the rings: JSON documents in a private folder of the ring
directory (0700, files 0600, the newest ``keep`` of them), e.g. ``summaries/`` and ``probes/``."""

from __future__ import annotations

import contextlib
import json
import os
import time
from typing import Any


def keep_json(document: dict[str, Any], ring_dir: str, folder: str, name: str, keep: int) -> str | None:
    """Write ``document`` as ``<ring_dir>/<folder>/<name>``; its path, or None if it cannot be kept."""
    from xfertop.reporter._ring_writer import RingDirError, open_private_dir

    directory = os.path.join(ring_dir, folder)
    try:
        dir_fd = open_private_dir(directory)
    except (RingDirError, OSError):
        return None
    try:
        fd = os.open(
            name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd
        )
        with os.fdopen(fd, "w") as file:
            json.dump(document, file, indent=1)
            file.write("\n")
        _keep_newest(dir_fd, keep)
    except OSError:
        return None
    finally:
        os.close(dir_fd)
    return os.path.join(directory, name)


def kept_name(started_unix_s: float, job: str) -> str:
    """``<local time>-<pid>-<job>.json``: names sort by time."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime(started_unix_s))
    return f"{stamp}-{os.getpid()}-{job.replace('/', '_').replace(' ', '_')}.json"


def _keep_newest(dir_fd: int, keep: int) -> None:
    names = sorted(name for name in os.listdir(dir_fd) if name.endswith(".json"))
    for name in names[:-keep]:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dir_fd)
