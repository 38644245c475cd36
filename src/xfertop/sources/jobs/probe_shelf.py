"""The probes `xfertop probe` kept in ``<ring directory>/probes/`` (launch/probe.py), for the job detail
screen's "last probe" line. Read again only when the folder changes; a file that is not a probe report
(malformed, foreign, half-written) is passed over."""

from __future__ import annotations

import json
import os
from typing import Any

from xfertop.model.jobs import ProbeRank, ProbeRecord

PROBE_DIR_NAME = "probes"
#: At most this many of the newest reports are read.
MAX_PROBES = 20


class ProbeShelf:
    def __init__(self) -> None:
        self._stamp: tuple[int, int, int] | None = None
        self._probes: tuple[ProbeRecord, ...] = ()

    def read(self, ring_dir: str) -> tuple[ProbeRecord, ...]:
        """The kept probes, newest first; () where there are none or the folder cannot be read."""
        directory = os.path.join(ring_dir, PROBE_DIR_NAME)
        try:
            st = os.stat(directory)
        except OSError:
            self._stamp, self._probes = None, ()
            return ()
        stamp = (st.st_dev, st.st_ino, st.st_mtime_ns)
        if stamp != self._stamp:
            self._stamp, self._probes = stamp, _read_all(directory)
        return self._probes


def _read_all(directory: str) -> tuple[ProbeRecord, ...]:
    try:
        names = sorted((name for name in os.listdir(directory) if name.endswith(".json")), reverse=True)
    except OSError:
        return ()
    found = []
    uid = os.getuid()
    for name in names[:MAX_PROBES]:
        path = os.path.join(directory, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            with os.fdopen(fd, encoding="utf-8") as handle:
                if os.fstat(handle.fileno()).st_uid != uid:
                    continue
                record = _record(json.load(handle))
        except (OSError, ValueError):
            continue
        if record is not None:
            found.append(record)
    return tuple(sorted(found, key=lambda record: record.finished_unix_s, reverse=True))


def _record(document: Any) -> ProbeRecord | None:
    try:
        ranks = tuple(
            ProbeRank(
                rank=_int_or_none(rank.get("rank")),
                baseline_step_s=_float_or_none(rank.get("baseline_step_s")),
                speedup_input_free=_float_or_none(rank.get("speedup_input_free")),
                speedup_pinned=_float_or_none(rank.get("speedup_pinned")),
                speedup_copy_free=_float_or_none(rank.get("speedup_copy_free")),
                tensors_pinned=_int_or_none(rank.get("tensors_pinned")) or 0,
                copies_made_resident=_int_or_none(rank.get("copies_made_resident")) or 0,
            )
            for rank in document["ranks"]
        )
        return ProbeRecord(
            job=str(document["job"]),
            argv=tuple(str(arg) for arg in document.get("argv", ())),
            finished_unix_s=float(document["finished_unix_s"]),
            complete=bool(document.get("complete")),
            ranks=ranks,
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _float_or_none(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None
