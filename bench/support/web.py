"""What the benches that serve the app over HTTP share: a Redis cache database emptied around a
run, and gunicorn started on a free loopback port and waited for."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]


def empty_redis(url: str) -> bool:
    """Empty this Redis database; False when no Redis answers there."""
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).flushdb()
    except redis.RedisError:
        return False
    return True


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(
    app: str, env: dict, *, workers: int, threads: int = 1, options=(), log: Path | None = None
) -> tuple[subprocess.Popen, int]:
    """gunicorn serving `app` on a free loopback port, once its login page answers: (process, port).
    Its output goes to `log` when given, whose end is shown if it never comes up."""
    port = free_port()
    command = [str(Path(sys.executable).with_name("gunicorn")), app, "--bind", f"127.0.0.1:{port}", "--workers", str(workers)]
    if threads > 1:
        command += ["--threads", str(threads)]
    with open(log or os.devnull, "w") as output:  # the server keeps its own handle on the file
        proc = subprocess.Popen(
            [*command, *options], cwd=REPO, env=env, stdout=output if log else None, stderr=subprocess.STDOUT if log else None
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/accounts/login/", timeout=2).status_code == 200:
                return proc, port
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.terminate()
    tail = f": {log.read_text()[-2000:]}" if log else ""
    raise SystemExit(f"gunicorn did not come up within 60 s{tail}")
