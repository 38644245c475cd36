"""What /proc and cgroups say of the host and of the training processes: CPU, memory, where a process
may run, its cgroup's CPU quota, pinned host memory, whether we may look into another process."""
