"""What NVML says of each GPU: utilisation, memory, clocks, and PCIe throughput (GPM, byte counters, the
sampled NVML call). `nvml_api.py` is the only module in xfertop that imports pynvml."""
