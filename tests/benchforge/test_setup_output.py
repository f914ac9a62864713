"""What a new user sees in the console: the development-key warning once, when a server starts,
and each of Django's log lines once."""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from benchforge.apps import DEV_KEY_WARNING, starting_a_server
from tests.conftest import REPO_ROOT


def _dev_env(tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DATABASE_URL", "DJANGO_ALLOW_ASYNC_UNSAFE")}
    env.update(DEBUG="1", BENCHFORGE_VAR_DIR=str(tmp_path), PYTHONUNBUFFERED="1")
    return env


def test_only_the_serving_process_of_runserver_counts_as_a_server():
    assert starting_a_server(["manage.py", "runserver"], {"RUN_MAIN": "true"})
    assert starting_a_server(["manage.py", "runserver", "--noreload"], {})
    assert not starting_a_server(["manage.py", "runserver"], {})  # the autoreloader's watcher
    for command in ("migrate", "seed_demo", "shell", "check"):
        assert not starting_a_server(["manage.py", command], {"RUN_MAIN": "true"})


def test_management_commands_print_no_key_warning(tmp_path):
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=REPO_ROOT, env=_dev_env(tmp_path), capture_output=True, text=True
    )
    assert result.returncode == 0 and "SECRET_KEY" not in result.stdout + result.stderr


def test_runserver_warns_once_and_logs_each_line_once(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path / "server.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}"],
            cwd=REPO_ROOT,
            env=_dev_env(tmp_path),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while "Quit the server" not in log.read_text():
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/no-such-page/", timeout=10)
        except urllib.error.HTTPError as exc:
            assert exc.code == 404
        time.sleep(0.5)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=10)
    text = log.read_text()
    assert text.count(DEV_KEY_WARNING.strip()) == 1, text
    assert text.count("Not Found: /api/v1/no-such-page/") == 1, text


def test_the_demo_server_prints_one_open_line_with_the_port_it_really_listens_on(tmp_path):
    # PORT=0: the system picks the port; the line must name that port, not the one asked for.
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "--verbosity", "0"],
        cwd=REPO_ROOT,
        env=_dev_env(tmp_path),
        check=True,
    )
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--skip-checks", "--noreload", "127.0.0.1:0"],
            cwd=REPO_ROOT,
            env=_dev_env(tmp_path),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while "open http://" not in log.read_text():
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        time.sleep(0.5)
        lines = [line for line in log.read_text().splitlines() if line.strip()]
        (line,) = [line for line in lines if "http://" in line]
        port = int(line.split("http://127.0.0.1:")[1].split("/")[0])
        assert port != 0
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/no-such-page/", timeout=10)
        except urllib.error.HTTPError as exc:
            assert exc.code == 404
        # It serves the static files, as runserver does in development.
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/static/benchforge/app.css", timeout=10) as css:
            assert css.status == 200 and css.headers["Content-Type"].startswith("text/css")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=10)
    # Nothing but the key warning and that line: no Django banner, no reloader chatter.
    assert [line for line in lines if line.strip() != DEV_KEY_WARNING.strip()] == [line], lines
