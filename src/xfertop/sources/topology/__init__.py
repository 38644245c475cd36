"""The PCIe and NUMA topology from sysfs and NVML: which GPU hangs off which switch and NUMA node."""
