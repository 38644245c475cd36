"""The documented shape of `xfertop --once --json` (docs/json-schema.md), checked key by key."""

from __future__ import annotations

from typing import Any

NUMBER = (int, float)
GPU_KEYS = {
    "index": int,
    "name": str,
    "uuid": str,
    "bus_id": str,
    "pcie": dict,
    "link": dict,
    "errors": dict,
    "processes": list,
    "throttle_reasons": list,
    "link_summary": dict,
}
HOST_KEYS = {
    "hostname": str,
    "cpu_percent": NUMBER,
    "cpu_per_core_percent": list,
    "load_avg": list,
    "mem_total_bytes": int,
    "mem_used_bytes": int,
    "swap_total_bytes": int,
    "processes": list,
}
JOB_KEYS = {"job_key": str, "name": str, "verdict": dict, "ranks": list}
TOPOLOGY_KEYS = {
    "gpus": list,
    "links": list,
    "numa_cpus": dict,
    "processes": list,
    "gpu_source": str,
    "warnings": list,
}
TOPOLOGY_GPU_KEYS = {
    "index": int,
    "bus_id": str,
    "numa_node": (int, type(None)),
    "local_cpus": list,
    "pcie_path": list,
}
RANK_KEYS = {
    "pid": int,
    "status": str,
    "window": (dict, type(None)),
    "recent_steps": list,
    "steps_recorded": int,
}


def _check(obj: dict[str, Any], keys: dict[str, Any], where: str) -> list[str]:
    problems = []
    for key, kind in keys.items():
        if key not in obj:
            problems.append(f"{where}: missing {key}")
        elif obj[key] is not None and not isinstance(obj[key], kind):
            problems.append(f"{where}.{key}: {type(obj[key]).__name__}, expected {kind}")
    return problems


def schema_problems(document: dict[str, Any]) -> list[str]:
    """Every way ``document`` departs from schema xfertop.snapshot/1 (empty when it conforms)."""
    problems = _check(
        document,
        {
            "schema": str,
            "timestamp": NUMBER,
            "driver": dict,
            "gpus": list,
            "host": (dict, type(None)),
            "jobs": dict,
            "topology": (dict, type(None)),
        },
        "top",
    )
    if problems:
        return problems
    if document["schema"] != "xfertop.snapshot/1":
        problems.append(f"schema is {document['schema']!r}")
    if not document["gpus"] and not document["driver"].get("error"):
        problems.append("no GPUs and no reason in driver.error")
    for i, gpu in enumerate(document["gpus"]):
        problems += _check(gpu, GPU_KEYS, f"gpus[{i}]")
    if document["host"] is not None:
        problems += _check(document["host"], HOST_KEYS, "host")
    problems += _check(document["jobs"], {"items": list, "problems": list}, "jobs")
    topology = document["topology"]
    if topology is not None:
        problems += _check(topology, TOPOLOGY_KEYS, "topology")
        for g, gpu in enumerate(topology.get("gpus", [])):
            problems += _check(gpu, TOPOLOGY_GPU_KEYS, f"topology.gpus[{g}]")
    for j, job in enumerate(document["jobs"].get("items", [])):
        problems += _check(job, JOB_KEYS, f"jobs.items[{j}]")
        for r, rank in enumerate(job.get("ranks", [])):
            problems += _check(rank, RANK_KEYS, f"jobs.items[{j}].ranks[{r}]")
    return problems
