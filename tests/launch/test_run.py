"""`xfertop run -- python train.py`: instrumented without a code change; output, status, signals intact."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import resource
import shlex
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from ring_test_tools import SRC_DIR, child_env, ranks, wait_until
from xfertop.launch import run as run_module
from xfertop.sources.jobs.source import JobsSource

TRAIN = """
import sys
import torch
from torch.utils.data import DataLoader, TensorDataset

print("training starts", flush=True)
print("a warning on stderr", file=sys.stderr, flush=True)
loader = DataLoader(TensorDataset(torch.ones(64, 4)), batch_size=8)
for (batch,) in loader:
    batch = batch.to("meta", non_blocking=True)
print("done", flush=True)
sys.exit(int(sys.argv[1]))
"""

WAITS_FOR_SIGNAL = """
import signal, sys, time
import torch
from torch.utils.data import DataLoader, TensorDataset

for _ in DataLoader(TensorDataset(torch.ones(8, 1)), batch_size=2):
    pass
print("ready", flush=True)
signal.pause()
"""


def _xfertop_run(
    tmp_path: Path, script_text: str, *args: str, copy_timing: bool = True, **env: str
) -> subprocess.Popen[str]:
    script = tmp_path / "train.py"
    script.write_text(script_text)
    # --no-summary: these tests compare the job's own output byte for byte (test_run_summary.py checks
    # that the summary only follows it).
    flags = ["--no-summary"] if copy_timing else ["--no-summary", "--no-copy-timing"]
    command = [sys.executable, "-m", "xfertop.cli.run", *flags, "--", sys.executable, str(script), *args]
    return subprocess.Popen(
        command,
        env=child_env(tmp_path / "rings", **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_run_watches_the_dataloader_and_passes_exit_status_and_output_through(tmp_path: Path) -> None:
    wrapped = _xfertop_run(tmp_path, TRAIN, "3")  # copies timed: the default
    out, err = wrapped.communicate(timeout=120)
    direct = subprocess.run(
        [sys.executable, str(tmp_path / "train.py"), "3"],
        capture_output=True,
        text=True,
        env=child_env(tmp_path / "other-rings"),
        timeout=120,
    )
    assert wrapped.returncode == 3 == direct.returncode
    assert (out, err) == (direct.stdout, direct.stderr)
    [rank] = ranks(JobsSource(ring_dir=str(tmp_path / "rings")))
    assert [s.step for s in rank.steps] == list(range(8))
    assert all(s.h2d_bytes == 8 * 4 * 4 and s.samples == 8 and s.pageable_non_blocking for s in rank.steps)
    assert rank.dataloader_workers is None or rank.dataloader_workers == 0


WARNS = """
import sys, warnings
import torch
from torch.utils.data import DataLoader, TensorDataset

if sys.argv[1] == "ignore-main":
    warnings.filterwarnings("ignore", module="__main__")
weight = torch.ones(4, requires_grad=True)
for (batch,) in DataLoader(TensorDataset(torch.ones(32, 4)), batch_size=8):
    batch = batch.to("meta", non_blocking=True)
    loss = (weight * 2).sum()
    loss.backward()
    value = float(loss)  # torch warns: the tensor requires grad
print("done", value, flush=True)
"""


@pytest.mark.parametrize(
    ("how", "copy_timing", "env"),
    [
        ("default", True, {}),
        ("default", False, {}),
        ("ignore-main", True, {}),
        ("default", True, {"PYTHONWARNINGS": "error:Converting a tensor:UserWarning"}),
    ],
)
def test_warnings_inside_wrapped_calls_name_the_jobs_line_as_without_xfertop(
    tmp_path: Path, how: str, copy_timing: bool, env: dict[str, str]
) -> None:
    # float() of a tensor that requires grad warns inside the sync wrapper: the job's file and line, its
    # registry and its module's filter decide, not xfertop's (the message named xfertop's wrapper).
    wrapped = _xfertop_run(tmp_path, WARNS, how, copy_timing=copy_timing, **env)
    out, err = wrapped.communicate(timeout=120)
    direct = subprocess.run(
        [sys.executable, str(tmp_path / "train.py"), how],
        capture_output=True,
        text=True,
        env=child_env(tmp_path / "other-rings", **env),
        timeout=120,
    )
    assert wrapped.returncode == direct.returncode
    assert str(Path(SRC_DIR) / "xfertop") not in err.split("Traceback")[0]  # no line of xfertop's named
    if direct.returncode == 0:
        assert (out, err) == (direct.stdout, direct.stderr)
        assert ("to a scalar" in err) == (how != "ignore-main")  # (torch says it once a process)
    else:  # an error filter: the same warning raised (its traceback passes through the wrapper)
        assert direct.returncode == 1 and err.splitlines()[-2:] == direct.stderr.splitlines()[-2:]
        assert "to a scalar" in err.splitlines()[-2]


def test_a_signal_to_xfertop_reaches_the_job_and_xfertop_dies_the_same_way(tmp_path: Path) -> None:
    wrapped = _xfertop_run(tmp_path, WAITS_FOR_SIGNAL)
    assert wrapped.stdout is not None
    assert wrapped.stdout.readline() == "ready\n"
    wrapped.send_signal(signal.SIGTERM)
    assert wrapped.wait(timeout=30) == -signal.SIGTERM
    job = wait_until(lambda: ranks(JobsSource(ring_dir=str(tmp_path / "rings"))), 10, "the job's ring")
    wait_until(
        lambda: ranks(JobsSource(ring_dir=str(tmp_path / "rings")))[0].status == "finished",
        10,
        "the job to be gone",
    )
    assert len(job[0].steps) == 4


def test_an_existing_sitecustomize_still_runs_and_tensor_to_is_left_alone(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text(
        "import os, sys\nprint('their sitecustomize ran in', os.environ.get('XFERTOP_RUN') == '1' and 'job'"
        " or 'launcher', file=sys.stderr)\n"
    )
    env_path = child_env(tmp_path / "rings")["PYTHONPATH"] + ":" + str(theirs)
    wrapped = _xfertop_run(tmp_path, TRAIN, "0", copy_timing=False, PYTHONPATH=env_path)
    _, err = wrapped.communicate(timeout=120)
    assert wrapped.returncode == 0
    # Once in the job, as without xfertop; the launcher, a Python program, runs it as any Python does.
    assert err.count("their sitecustomize ran in job") == 1, err
    assert err.count("their sitecustomize ran in launcher") == 1, err
    [rank] = ranks(JobsSource(ring_dir=str(tmp_path / "rings")))
    # With --no-copy-timing, Tensor.to is not wrapped: the steps are timed, the copies are not counted.
    assert len(rank.steps) == 8 and all(s.h2d_bytes == 0 for s in rank.steps)


def test_a_missing_command_is_a_clear_sentence(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "xfertop.cli.run", "--", "no-such-command-xyz"],
        capture_output=True,
        text=True,
        env=child_env(tmp_path / "rings"),
        timeout=60,
    )
    assert result.returncode == 127
    assert "xfertop run: no-such-command-xyz: command not found" in result.stderr


def test_a_directory_as_the_command_says_it_is_one(tmp_path: Path) -> None:
    """A new user's `xfertop run -- /tmp/nu` read "permission denied"."""
    result = subprocess.run(
        [sys.executable, "-m", "xfertop.cli.run", "--", str(tmp_path)],
        capture_output=True,
        text=True,
        env=child_env(tmp_path / "rings"),
        timeout=60,
    )
    assert result.returncode == 126
    assert result.stderr == f"xfertop run: {tmp_path}: is a directory\n"


def test_file_descriptors_the_job_inherits_stay_open(tmp_path: Path) -> None:
    # `xfertop run -- cmd 3>log`: the job writes to fd 3 as it would without xfertop.
    log = tmp_path / "fd3.log"
    inner = f"{shlex.quote(sys.executable)} -m xfertop.cli.run -- sh -c 'echo via-fd-3 >&3'"
    result = subprocess.run(
        ["sh", "-c", f"{inner} 3>{shlex.quote(str(log))}"],
        env=child_env(tmp_path / "rings"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode, log.read_text()) == (0, "via-fd-3\n"), result.stderr


SIGNAL_DURING_START = """
import os, signal, subprocess, sys
from xfertop.launch import run

real_popen = subprocess.Popen

def popen_after_a_sigterm(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGTERM)  # the job is cancelled while xfertop starts it
    return real_popen(*args, **kwargs)

subprocess.Popen = popen_after_a_sigterm
sys.exit(run.run_command(["--", "sleep", "30"]))
"""


def test_a_signal_that_arrives_while_the_job_starts_still_reaches_it(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", SIGNAL_DURING_START],
        env=child_env(tmp_path / "rings"),
        capture_output=True,
        text=True,
        timeout=25,
    )
    assert result.returncode == -signal.SIGTERM, result.stderr


COUNTS_SIGNALS = """
import signal, sys, time
seen = []
signal.signal(getattr(signal, sys.argv[1]), lambda signum, frame: seen.append(signum))
print("ready", flush=True)
deadline = time.monotonic() + 20
while not seen and time.monotonic() < deadline:
    time.sleep(0.01)
time.sleep(1.0)  # a forwarded duplicate would arrive in this time
print("signals", len(seen), flush=True)
"""


@pytest.mark.parametrize("key_signal", [signal.SIGINT, signal.SIGQUIT], ids=["ctrl-c", "ctrl-backslash"])
def test_a_key_signal_in_the_terminal_reaches_the_job_once_even_with_stdin_redirected(
    tmp_path: Path, key_signal: signal.Signals
) -> None:
    script = tmp_path / "counts.py"
    script.write_text(COUNTS_SIGNALS)
    master, slave = pty.openpty()

    def take_the_terminal() -> None:  # a session of its own, with the pty as its controlling terminal
        fcntl.ioctl(1, termios.TIOCSCTTY, 0)

    try:
        job = subprocess.Popen(
            [sys.executable, "-m", "xfertop.cli.run", "--", sys.executable, str(script), key_signal.name],
            env=child_env(tmp_path / "rings"),
            stdin=subprocess.DEVNULL,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
            preexec_fn=take_the_terminal,
        )
        os.close(slave)
        output = b""
        deadline = time.monotonic() + 30
        while b"ready" not in output and time.monotonic() < deadline:
            output += os.read(master, 1024)
        os.killpg(job.pid, key_signal)  # what the terminal does on Ctrl-C: the whole foreground group
        job.wait(timeout=30)
        with contextlib.suppress(OSError):
            while b"signals" not in output or not output.endswith(b"\n"):
                output += os.read(master, 1024)
    finally:
        os.close(master)
    assert b"signals 1" in output, output


def test_a_job_on_another_python_gets_xfertop_but_none_of_xfertops_other_packages(tmp_path: Path) -> None:
    # xfertop installed apart from the job (pipx): the bootstrap imports xfertop from xfertop's environment,
    # but the job must not start finding that environment's other packages (optional-dependency checks
    # would change what the job does and prints).
    parent = tmp_path / "xfertop-env-site-packages"
    (parent / "only_in_xfertops_env").mkdir(parents=True)
    (parent / "only_in_xfertops_env" / "__init__.py").write_text("")
    (parent / "xfertop").symlink_to(Path(run_module.__file__).resolve().parents[1])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(run_module.child_environment(env, copy_timing=False))
    env["XFERTOP_PACKAGE_PARENT"] = str(parent)
    env["XFERTOP_DIR"] = str(tmp_path / "rings")
    check = (
        "import importlib.util, sys; print('xfertop.launch.autopatch' in sys.modules, "
        "importlib.util.find_spec('only_in_xfertops_env') is None)"
    )
    result = subprocess.run(
        [sys.base_prefix + "/bin/python3", "-c", check], env=env, capture_output=True, text=True, timeout=60
    )
    assert (result.stdout, result.stderr) == ("True True\n", "")


def test_a_job_killed_by_sigkill_kills_xfertop_the_same_way(tmp_path: Path) -> None:
    # What the OOM killer does: SIGKILL has no handler to reset, and xfertop must still die of it.
    result = subprocess.run(
        [sys.executable, "-m", "xfertop.cli.run", "--no-summary", "--", "sh", "-c", "kill -9 $$"],
        env=child_env(tmp_path / "rings"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode, result.stderr) == (-signal.SIGKILL, "")


def _allow_core_dumps() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))


@pytest.mark.skipif(
    Path("/proc/sys/kernel/core_pattern").read_text().strip() != "core"
    or resource.getrlimit(resource.RLIMIT_CORE)[1] == 0,
    reason="needs core files written as ./core",
)
def test_a_crashing_jobs_core_file_is_not_overwritten_by_xfertops_own(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "xfertop.cli.run", "--", "sh", "-c", "kill -SEGV $$"],
        env=child_env(tmp_path / "rings"),
        cwd=tmp_path,
        preexec_fn=_allow_core_dumps,
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == -signal.SIGSEGV
    core = tmp_path / "core"
    assert core.exists() and b"xfertop.cli.run" not in core.read_bytes()  # the job's, not xfertop's


def test_the_bootstrap_on_the_path_twice_under_two_names_starts_python_quietly(tmp_path: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(run_module.BOOTSTRAP_DIR)
    env = child_env(tmp_path / "rings")
    env.update(run_module.child_environment(env, copy_timing=False))
    env["PYTHONPATH"] = env["PYTHONPATH"] + os.pathsep + str(alias)
    result = subprocess.run(
        [sys.executable, "-c", "print('started')"], env=env, capture_output=True, text=True, timeout=60
    )
    assert (result.stdout, result.stderr) == ("started\n", "")
