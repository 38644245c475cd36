"""The one reading of /proc/<pid>/stat: "pid (comm) state ppid ...", where comm (field 2) may hold
spaces and parentheses, so fields 3 on are what follows the LAST ')'.

Standard library only and no xfertop import: the reporter (through ``wire``) and every source use it.
Each user keeps its own rule for what it needs of the fields (how many, which may be missing).
"""

from __future__ import annotations

from typing import AnyStr


def split_stat(data: AnyStr) -> tuple[AnyStr, AnyStr | None, AnyStr] | None:
    """/proc/<pid>/stat (bytes or str) cut at its last ')': ``(before, comm, after)``.

    ``before`` is everything ahead of that ')' (pid, '(' and name); ``comm`` the name, from the first
    '(' to the last ')', None where no '(' comes before it; ``after`` everything that follows the ')'
    (" state ppid ...": ``after.split()`` gives field 3 on). None where there is no ')' at all.
    """
    if isinstance(data, bytes):
        close = data.rfind(b")")
        open_ = data.find(b"(", 0, close)
    else:
        close = data.rfind(")")
        open_ = data.find("(", 0, close)
    if close < 0:
        return None
    comm = data[open_ + 1 : close] if open_ >= 0 else None
    return data[:close], comm, data[close + 1 :]
