"""Ranks of one DDP job are found from their environment, never from the job's cooperation."""

from __future__ import annotations

from pathlib import Path

from xfertop.sources.jobs.ddp_ranks import job_ranks, read_environ


def add_process(
    proc: Path, pid: int, env: dict[str, str], uid: int = 1000, ppid: int = 1, cmd: str = "python train.py"
) -> None:
    folder = proc / str(pid)
    folder.mkdir(parents=True)
    (folder / "environ").write_bytes(b"\0".join(f"{k}={v}".encode() for k, v in env.items()) + b"\0")
    (folder / "status").write_text(f"Name:\tpython\nPPid:\t{ppid}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n")
    (folder / "cmdline").write_bytes(cmd.replace(" ", "\0").encode() + b"\0")


def elastic(rank: int, run_id: str = "job-a") -> dict[str, str]:
    return {
        "PATH": "/usr/bin",
        "RANK": str(rank),
        "LOCAL_RANK": str(rank),
        "WORLD_SIZE": "3",
        "TORCHELASTIC_RUN_ID": run_id,
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "29500",
    }


def test_all_ranks_of_a_torchrun_job_are_found_from_any_one_of_them(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    for rank, pid in enumerate((301, 302, 303)):
        add_process(proc, pid, elastic(rank), ppid=300)
    add_process(proc, 401, elastic(0), ppid=301)  # a DataLoader worker of rank 0: same environment
    add_process(proc, 501, elastic(0, run_id="job-b"))  # another job
    add_process(proc, 601, elastic(1), uid=2000)  # someone else's process that looks alike
    ranks = job_ranks(302, proc)
    assert [(t.pid, t.rank) for t in ranks] == [(301, 0), (302, 1), (303, 2)]
    assert {t.job_key for t in ranks} == {"elastic:job-a"}
    assert ranks[0].world_size == 3 and ranks[0].command == "python train.py"


def test_ranks_without_torchelastic_are_grouped_by_master_address_and_port(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    for rank, pid in enumerate((11, 12)):
        add_process(proc, pid, {"RANK": str(rank), "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "1234"})
    add_process(proc, 13, {"RANK": "0", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "9999"})
    assert [t.pid for t in job_ranks(11, proc)] == [11, 12]


def test_a_plain_process_is_attached_alone(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    add_process(proc, 7, {"PATH": "/usr/bin"})
    (target,) = job_ranks(7, proc)
    assert target.pid == 7 and target.rank is None and target.job_key == "pid:7"


def test_an_unreadable_environment_reads_as_empty(tmp_path: Path) -> None:
    assert read_environ(12345, tmp_path) == {}
