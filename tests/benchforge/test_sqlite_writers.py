"""The embedded runtime's SQLite file under concurrent writers: a real multi-process, multi-thread
server and two simultaneous imports. Writers wait their turn (WAL + IMMEDIATE transactions);
none fails with "database is locked"."""

import concurrent.futures
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import PASSWORD, REPO_ROOT
from tests.factories import jpeg

# On one test process, so the migrated site below is made once (loadgroup).
pytestmark = pytest.mark.xdist_group("sqlite_site")

SETUP = f"""
from benchforge.services import create_or_update_user
from curation.services import load_preset
from annotation.services import create_item
b = load_preset("alignmmbench", slug="demo")
u, _ = create_or_update_user("anna", "annotator", password="{PASSWORD}", benchmarks=[b])
item = create_item(b, task=b.tasks.get(slug="counting"), user=u)
print(item.pk)
"""


def _site_env(folder: Path) -> dict:
    env = dict(
        os.environ,
        DATABASE_URL=f"sqlite:///{folder / 'site.sqlite3'}",
        MEDIA_ROOT=str(folder / "media"),
        DEBUG="1",
        PYTHONPATH=str(REPO_ROOT),
        BENCHFORGE_LOGIN_FAILURE_LIMIT="1000",
    )
    env.pop("CELERY_BROKER_URL", None)
    return env


MANAGE = [sys.executable, str(REPO_ROOT / "manage.py")]


@pytest.fixture(scope="module")
def _migrated_site(tmp_path_factory):
    """A site's SQLite file migrated and set up once for the module (migrating takes most of a
    minute on a loaded machine); each test gets a copy of it."""
    folder = tmp_path_factory.mktemp("sqlite-site")
    env = _site_env(folder)
    subprocess.run([*MANAGE, "migrate", "--noinput"], env=env, check=True, capture_output=True, cwd=REPO_ROOT)
    item_id = int(
        subprocess.run(
            [*MANAGE, "shell", "-c", SETUP], env=env, check=True, capture_output=True, text=True, cwd=REPO_ROOT
        ).stdout.split()[-1]
    )
    return folder, item_id


@pytest.fixture
def sqlite_site(tmp_path, _migrated_site):
    template, item_id = _migrated_site
    # The commands have exited, so the file holds every write (SQLite checkpoints WAL on the last close).
    for path in template.iterdir():
        copy = shutil.copytree if path.is_dir() else shutil.copy2
        copy(path, tmp_path / path.name)
    return {"env": _site_env(tmp_path), "manage": MANAGE, "item_id": item_id, "tmp": tmp_path}


@pytest.fixture
def server(sqlite_site):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (sqlite_site["tmp"] / "server.log").open("w")
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("gunicorn")),
            "benchforge.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "3",
            "--threads",
            "4",
            "--timeout",
            "60",
        ],
        env=sqlite_site["env"],
        cwd=REPO_ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(base + "/accounts/login/", timeout=1)
            break
        except httpx.HTTPError:
            time.sleep(0.2)
    yield base
    proc.terminate()
    proc.wait(timeout=20)
    log.close()
    print((sqlite_site["tmp"] / "server.log").read_text()[-3000:])


def test_ten_simultaneous_saves_of_one_item_never_fail(server, sqlite_site):
    token = httpx.post(server + "/api/v1/auth/token/", data={"username": "anna", "password": PASSWORD}).json()["token"]
    url = f"{server}/api/v1/benchmarks/demo/items/{sqlite_site['item_id']}/"
    headers = {"Authorization": f"Token {token}"}

    def save_from_version_1(n):
        return httpx.patch(url, json={"version": 1, "question": f"edit {n}"}, headers=headers, timeout=60).status_code

    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        codes = sorted(pool.map(save_from_version_1, range(10)))
    assert codes == [200] + [409] * 9  # one wins; the others are told, none is a 500

    def save_until_stored(n):
        codes = []
        while True:
            version = httpx.get(url, headers=headers, timeout=60).json()["version"]
            response = httpx.patch(url, json={"version": version, "question": f"again {n}"}, headers=headers, timeout=60)
            codes.append(response.status_code)
            if response.status_code != 409:
                return codes

    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        runs = list(pool.map(save_until_stored, range(10)))
    assert all(run[-1] == 200 and set(run) <= {200, 409} for run in runs)
    assert httpx.get(url, headers=headers).json()["version"] == 12  # 1 + the first winner + ten more: nothing lost


def test_two_simultaneous_folder_imports_both_finish(sqlite_site):
    folders = []
    for n in range(2):
        folder = sqlite_site["tmp"] / f"photos{n}"
        folder.mkdir()
        for i in range(12):
            (folder / f"{i}.jpg").write_bytes(jpeg(9500 + 100 * n + i))
        folders.append(folder)
    procs = [
        subprocess.Popen(
            [*sqlite_site["manage"], "ingest_folder", "demo", str(folder)],
            env=sqlite_site["env"],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for folder in folders
    ]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    assert all("succeeded" in out and "'added': 12" in out for out in outputs), outputs
