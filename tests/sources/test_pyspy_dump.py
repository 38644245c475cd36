"""`py-spy dump` as xfertop runs it: a dump that raced the running job is taken again.

py-spy stands in here as a script: the race (a --nonblocking read meeting a frame list mid-change) cannot
be made to happen on demand; tests/cli/test_attach_cli.py dumps a real job with the real py-spy.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from pyspy_support import FIXTURES
from xfertop.sources.stacks.pyspy_runner import DUMP_ATTEMPTS, PySpyError, dump

#: Stands in for py-spy: what a --nonblocking dump that met the target mid-change prints, ``FAILS`` times
#: (counted in a file beside it), then the recorded dump of a real job.
_RACING_PYSPY = """#!{python}
import pathlib, sys
count = pathlib.Path(__file__).with_suffix(".count")
calls = int(count.read_text()) if count.exists() else 0
count.write_text(str(calls + 1))
if calls < {fails}:
    print("Error: Failed to get stack traces", file=sys.stderr)
    sys.exit(1)
print(pathlib.Path({dump!r}).read_text())
"""


def _racing_pyspy(tmp_path: Path, fails: int) -> tuple[str, Path]:
    binary = tmp_path / "py-spy"
    dump_json = str(FIXTURES / "starved_w2.dump.json")
    binary.write_text(_RACING_PYSPY.format(python=sys.executable, fails=fails, dump=dump_json))
    binary.chmod(0o755)
    return str(binary), binary.with_suffix(".count")


def test_a_dump_that_raced_the_running_job_is_taken_again(tmp_path: Path) -> None:
    binary, calls = _racing_pyspy(tmp_path, fails=DUMP_ATTEMPTS - 1)
    stacks = dump(os.getpid(), binary=binary)
    assert [s for s in stacks if s.is_main_thread] and calls.read_text() == str(DUMP_ATTEMPTS)


def test_a_dump_that_keeps_failing_says_so_in_one_sentence(tmp_path: Path) -> None:
    binary, calls = _racing_pyspy(tmp_path, fails=DUMP_ATTEMPTS)
    with pytest.raises(PySpyError) as raised:
        dump(os.getpid(), binary=binary)
    assert calls.read_text() == str(DUMP_ATTEMPTS)
    assert str(raised.value).startswith("py-spy could not sample process ") and "\n" not in str(raised.value)
