"""A real Label Studio server for the interop tests, run from its own virtualenv
(tests/labelstudio/install.sh puts it there) on a free loopback port with a throwaway data dir.

Nothing it does leaves the machine: version checks, Sentry and analytics are switched off.
"""

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

LS_VERSION = "1.23.2"
USERNAME = "benchforge@example.com"
PASSWORD = "benchforge-ls-test-password"
# A legacy API token (40 hex characters), accepted because the server starts with legacy tokens on.
TOKEN = "b3nchf0rgeb3nchf0rgeb3nchf0rgeb3nchf0rg"
# Generous: a fresh data dir runs Label Studio's migrations (about 90 s on a quiet 2-core machine,
# 290 s seen on a loaded one); starts from the migrated template below take about 30 s.
START_TIMEOUT_S = 600


def server_venv() -> Path:
    default = Path.home() / ".cache" / "benchforge" / f"labelstudio-{LS_VERSION}"
    return Path(os.environ.get("BENCHFORGE_LS_VENV") or default)


def server_executable() -> Path | None:
    exe = server_venv() / "bin" / "label-studio"
    return exe if exe.exists() else None


def template_dir() -> Path:
    """A data dir migrated once per install (beside the venv, so it matches its version): each test
    session starts from a copy instead of running Label Studio's migrations again."""
    return server_venv() / "benchforge-migrated-data"


def free_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def offline_env(home: Path) -> dict[str, str]:
    """A clean environment: none of ours (DJANGO_SETTINGS_MODULE, DATABASE_URL, HOST...) leaks
    into the server, which reads many plain names."""
    env = {key: os.environ[key] for key in ("PATH", "LANG", "LC_ALL", "TMPDIR", "TZ") if key in os.environ}
    env.update(
        {
            "HOME": str(home),
            "LATEST_VERSION_CHECK": "false",
            "COLLECT_ANALYTICS": "false",
            "SENTRY_DSN": "",
            "FRONTEND_SENTRY_DSN": "",
            "DJANGO_DB": "sqlite",
            "LOG_LEVEL": "WARNING",
        }
    )
    return env


@dataclass
class LabelStudioServer:
    url: str
    token: str
    process: subprocess.Popen
    log_path: Path
    started_in_s: float

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)  # its own session: only what it started
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


def start_server(exe: Path, workdir: Path) -> LabelStudioServer:
    """A server on a copy of the migrated template (made by the first start on this install)."""
    template = template_dir()
    if not template.is_dir():
        _make_template(exe, template)
    shutil.copytree(template, workdir / "data")
    return _start(exe, workdir)


def _make_template(exe: Path, template: Path) -> None:
    # Built in a scratch folder and renamed into place, so a session running beside this one
    # never copies a half-migrated database.
    scratch = template.with_name(f"{template.name}.{os.getpid()}")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    _start(exe, scratch).stop()
    try:
        (scratch / "data").rename(template)
    except OSError:
        pass  # another session got there first; its template is as good
    shutil.rmtree(scratch, ignore_errors=True)


def _start(exe: Path, workdir: Path) -> LabelStudioServer:
    port = free_loopback_port()
    data_dir = workdir / "data"
    home = workdir / "home"
    home.mkdir(parents=True, exist_ok=True)
    log_path = workdir / "server.log"
    command = [
        str(exe),
        "start",
        "--no-browser",
        "--internal-host",
        "127.0.0.1",
        "-p",
        str(port),
        "--data-dir",
        str(data_dir),
        "--username",
        USERNAME,
        "--password",
        PASSWORD,
        "--user-token",
        TOKEN,
        "--enable-legacy-api-token",
        "--log-level",
        "WARNING",
    ]
    started = time.monotonic()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=workdir,
            env=offline_env(home),
            start_new_session=True,
        )
    server = LabelStudioServer(f"http://127.0.0.1:{port}", TOKEN, process, log_path, 0.0)
    deadline = started + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"Label Studio exited with code {process.returncode} while starting:\n{server.log_tail()}")
        try:
            if httpx.get(f"{server.url}/health", timeout=2).status_code == 200:
                server.started_in_s = time.monotonic() - started
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    server.stop()
    raise RuntimeError(f"Label Studio did not answer /health within {START_TIMEOUT_S} s:\n{server.log_tail()}")
