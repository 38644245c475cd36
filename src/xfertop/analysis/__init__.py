"""Pure functions: snapshots in, numbers and verdicts out. No threads, no hardware, no UI."""
