"""Microbenchmarks and acceptance checks, run in a child process that streams JSON lines."""
