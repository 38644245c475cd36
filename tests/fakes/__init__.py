"""Fakes at the hardware boundary only (NVML), shaped after what a real H200 answered."""
