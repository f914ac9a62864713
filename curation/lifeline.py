"""Child processes that end with the process that started them, however it ends (a SIGKILLed
worker runs no clean-up): each watches its owner's pid from a thread and exits once it is gone.
Pure Python, no Django settings (imported in a forkserver and its worker processes)."""

from __future__ import annotations

import os
import threading
import time

POLL_SECONDS = 0.5


def alive(pid: int) -> bool:
    """Whether process `pid` is still running (a zombie, killed but not yet reaped, is not)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
    except OSError:  # no /proc here: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def die_with(pid: int) -> None:
    """Exit this process (at once, no clean-up to wait on) once process `pid` is gone."""

    def watch():
        while alive(pid):
            time.sleep(POLL_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name=f"lifeline-{pid}", daemon=True).start()


# multiprocessing keeps a folder of its own (pymp-*, the forkserver's socket) that it removes at a
# clean exit only: a SIGKILLed worker leaves it. The process that made one names itself in it, so the
# next process starting image workers on this host removes the folders of processes that are gone.
OWNER_FILE = "benchforge-owner"


def own_temp_dir() -> str:
    """This process's multiprocessing folder (made now if need be), marked as this process's."""
    import socket
    from multiprocessing import util

    folder = util.get_temp_dir()
    with open(os.path.join(folder, OWNER_FILE), "w") as handle:
        handle.write(f"{socket.gethostname()}\n{os.getpid()}\n")
    return folder


def remove_stale_temp_dirs() -> list[str]:
    """Remove the pymp-* folders left by processes of this host that are gone (only folders one of
    ours marked: another program's are never touched). Returns the folders removed."""
    import glob
    import re
    import shutil
    import socket
    import tempfile

    removed = []
    host = socket.gethostname()
    for marker in glob.glob(os.path.join(tempfile.gettempdir(), "pymp-*", OWNER_FILE)):
        try:
            with open(marker) as handle:
                owner_host, owner_pid = handle.read().split()[:2]
        except (OSError, ValueError):
            continue
        if owner_host != host or not re.fullmatch(r"[0-9]+", owner_pid) or alive(int(owner_pid)):
            continue
        folder = os.path.dirname(marker)
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed
