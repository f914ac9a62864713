"""A worker's own child processes end with it: the image-import worker processes (and the
forkserver and resource tracker behind them) do not outlive a SIGKILLed worker."""

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from tests.conftest import REPO_ROOT

SCRIPT = """
import os, sys, time
from curation import hashing
pool = hashing._processes(2)
print(sorted({pool.submit(os.getpid).result() for _ in range(8)}), flush=True)
time.sleep(120)
"""


def _processes_marked(mark: str) -> list[int]:
    """Live (not zombie) processes whose environment carries `mark`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if mark.encode() not in (entry / "environ").read_bytes():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found


def test_import_worker_processes_end_when_their_worker_is_killed():
    mark = f"BENCHFORGE_TEST_MARK={uuid.uuid4().hex}"
    name, value = mark.split("=")
    env = {**os.environ, name: value, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("["), line
        assert len(_processes_marked(mark)) >= 3  # the worker, the forkserver and its processes
        proc.send_signal(signal.SIGKILL)  # nothing of the worker's own clean-up runs
        proc.wait(timeout=10)
        deadline = time.monotonic() + 15
        while _processes_marked(mark) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = _processes_marked(mark)
        assert not left, [Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:200] for pid in left]
    finally:
        for pid in _processes_marked(mark):
            os.kill(pid, signal.SIGKILL)


def _start_pool(env) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.startswith("["), line
    return proc


def test_the_multiprocessing_folder_of_a_killed_worker_is_removed_by_the_next_one(tmp_path):
    """multiprocessing removes its pymp-* folder at a clean exit only; the next worker starting image
    processes removes the folders of workers that are gone (and never another program's)."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONPATH": str(REPO_ROOT)}
    foreign = temp / "pymp-notours"
    foreign.mkdir()  # another program's folder: not marked, left alone
    first = _start_pool(env)
    try:
        [left] = [p for p in temp.glob("pymp-*") if p != foreign]
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        time.sleep(1)  # (the forkserver and its workers end with it)
        assert left.exists()  # what a SIGKILLed worker leaves behind
        second = _start_pool(env)
        try:
            mine = sorted(temp.glob("pymp-*"))
            assert not left.exists() and foreign.exists() and len(mine) == 2, mine  # the second worker's own, and the foreign one
            live = next(p for p in mine if p != foreign)
            assert (live / "benchforge-owner").read_text().split()[1] == str(second.pid)
        finally:
            second.kill()
            second.wait(timeout=10)
    finally:
        if first.poll() is None:
            first.kill()
