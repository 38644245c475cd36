"""Samplers: plain threads that read the machine and publish immutable snapshots (xfertop.model).

No Textual here. The UI, the JSON export and the exporters only read ``latest()``.
"""
