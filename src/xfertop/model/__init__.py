"""Immutable snapshots: what the sources publish and everything above them reads.

Plain frozen dataclasses, no behaviour beyond derived properties. A value that a GPU or
host could not give is ``None`` (shown as "n/a"); a whole part that could not be read
carries its reason in ``error``. Units live in field names (``_bytes``, ``_bytes_per_s``,
``_percent``, ``_mhz``, ``_w``, ``_c``, ``_ms``).
"""
