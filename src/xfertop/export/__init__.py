"""Headless faces of the data: JSON snapshots, record/replay, Prometheus."""
