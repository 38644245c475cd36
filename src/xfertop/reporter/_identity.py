"""Who this process is: pid, start time, host, DDP rank identity, argv and the `xfertop run` that started
it (its launch token), for the ring header."""

from __future__ import annotations

import os
import socket
import sys
import time

from xfertop.wire import LAUNCH_TOKEN_ENV, RingIdentity, process_start_ticks


def _env_int(environ: dict[str, str], name: str) -> int | None:
    try:
        return int(environ[name])
    except (KeyError, ValueError):
        return None


def current_identity(device: str = "", environ: dict[str, str] | None = None) -> RingIdentity:
    env = dict(os.environ if environ is None else environ)
    master = ""
    if env.get("MASTER_ADDR"):
        master = f"{env['MASTER_ADDR']}:{env.get('MASTER_PORT', '')}"
    try:
        start_ticks = process_start_ticks()
    except (OSError, ValueError, IndexError):
        start_ticks = 0
    return RingIdentity(
        uid=os.geteuid(),
        pid=os.getpid(),
        ppid=os.getppid(),
        start_ticks=start_ticks,
        created_unix_ns=time.time_ns(),
        rank=_env_int(env, "RANK"),
        local_rank=_env_int(env, "LOCAL_RANK"),
        world_size=_env_int(env, "WORLD_SIZE"),
        host=socket.gethostname(),
        run_id=env.get("TORCHELASTIC_RUN_ID", ""),
        master=master,
        device=device,
        argv=tuple([sys.executable, *sys.argv]) if sys.argv and sys.argv[0] else (sys.executable,),
        launch_token=env.get(LAUNCH_TOKEN_ENV, ""),
    )
