"""Security probe: the attacks of the hardening issue, sent to a real production-mode server.

Run: .venv/bin/python bench/security_probe.py

It migrates a throwaway SQLite database (the embedded runtime), creates a benchmark with one
annotator ("anna"), one item and one image, and serves the app with gunicorn with DEBUG=0 (a random
SECRET_KEY; HTTPS redirect and secure cookies off, as behind a proxy that terminates TLS, because
this probe speaks plain HTTP on loopback). The web processes share a cache in BENCH_CACHE_URL
(default redis://127.0.0.1:6379/13, emptied before and after) so throttles count across them;
without Redis one process serves. Attackers use their own loopback addresses (127.0.0.2 for the
password guesser, 127.0.0.3 for the token guesser) so their lockouts do not block the rest.

Prints one line per probe: what was sent and what came back (status codes counted). The tests in
tests/benchforge/ hold each of these behaviours; this shows them end to end against a real server.
"""

from __future__ import annotations

import collections
import concurrent.futures
import os
import re
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.support.web import empty_redis, serve  # noqa: E402

CACHE_URL = os.environ.get("BENCH_CACHE_URL", "redis://127.0.0.1:6379/13")
PASSWORD = "probe-horse-battery-staple"
SETUP = f"""
from benchforge.services import create_or_update_user
from curation.services import load_preset
from annotation.services import create_item
b = load_preset("alignmmbench", slug="demo")
u, _ = create_or_update_user("anna", "annotator", password="{PASSWORD}", benchmarks=[b])
item = create_item(b, task=b.tasks.get(slug="counting"), user=u)
print(item.pk)
"""
XSS = "<script>fetch('/api/v1/me/')</script>"


def client(base: str, address: str = "127.0.0.1", **kwargs) -> httpx.Client:
    return httpx.Client(base_url=base, transport=httpx.HTTPTransport(local_address=address), timeout=60, **kwargs)


def login(base: str) -> httpx.Client:
    browser = client(base)
    page = browser.get("/accounts/login/").text
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    done = browser.post(
        "/accounts/login/",
        data={"csrfmiddlewaretoken": csrf, "username": "anna", "password": PASSWORD},
        headers={"Referer": base + "/accounts/login/"},
    )
    assert done.status_code == 302, f"the probe could not log in: {done.status_code}"
    return browser


def counts(codes) -> str:
    return ", ".join(f"{n}x{code}" for code, n in collections.Counter(codes).items())


def probe(base: str, item_id: int, manage: list[str], env: dict) -> None:
    browser = login(base)
    token = client(base).post("/api/v1/auth/token/", data={"username": "anna", "password": PASSWORD}).json()["token"]
    api = client(base, headers={"Authorization": f"Token {token}"})

    r = browser.get("/b/demo/items/image-chip/", params={"image_id": XSS})
    print(
        f"1 reflected XSS in image-chip: {r.status_code} {r.headers['content-type']}, nosniff="
        f"{r.headers.get('x-content-type-options')}, payload echoed as text, never as HTML={XSS in r.text and 'html' not in r.headers['content-type']}, "
        f"CSP script-src={re.search(r'script-src ([^;]*)', r.headers['content-security-policy']).group(1)}"
    )

    r = api.post("/api/v1/benchmarks/demo/items/", content=b"[" * 100_000, headers={"Content-Type": "application/json"})
    print(f"3 JSON nested 100,000 deep: {r.status_code} {r.headers['content-type']} {r.json()['detail']!r}")
    codes = [browser.get("/b/demo/items/", params={name: "x\x00"}).status_code for name in ("author", "task", "status")]
    codes += [api.get("/api/v1/assignments/", params={"benchmark": "demo\x00"}).status_code]
    codes += [browser.get("/jobs/1/", params={"outcome": "error\x00"}).status_code]
    print(f"3 NUL in ?author ?task ?status ?benchmark ?outcome: {counts(codes)}")
    r = api.post("/api/v1/benchmarks/demo/items/", json={"task": "counting", "images": [10**40]})
    print(f"3 images [10**40]: {r.status_code} {r.json()['detail']!r}")
    r = api.get("/api/v1/no-such-endpoint/")
    print(f"3 API 404 with DEBUG=0: {r.status_code} {r.headers['content-type']}")

    csrf = browser.cookies.get("csrftoken")
    r = browser.post(
        f"/b/demo/items/{item_id}/withdraw/",
        data={"version": "x", "csrfmiddlewaretoken": csrf},
        headers={"Referer": "https://evil.example/phish"},
    )
    print(f"7 refused POST with an external Referer: {r.status_code} to {r.headers.get('location')!r}")

    # 5: a request declaring 314 MB is refused from its headers; only 1 MB of it is ever sent.
    with socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1]))) as raw:
        head = (
            f"POST /api/v1/benchmarks/demo/images/ HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token {token}\r\n"
            "Content-Type: multipart/form-data; boundary=x\r\nContent-Length: 314000000\r\n\r\n"
        )
        started = time.perf_counter()
        raw.sendall(head.encode() + b"\0" * 1_000_000)
        status = raw.recv(200).split(b"\r\n", 1)[0].decode()
        print(f"5 upload declaring 314 MB: {status!r} after {time.perf_counter() - started:.2f} s")

    url = f"/api/v1/benchmarks/demo/items/{item_id}/"

    def save_from_version_1(n):
        return api.patch(url, json={"version": 1, "question": f"edit {n}"}).status_code

    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        codes = sorted(pool.map(save_from_version_1, range(10)))
    print(f"4 ten simultaneous saves of one item (SQLite): {counts(codes)}")

    guesser = client(base, "127.0.0.2")
    codes = [
        guesser.post("/api/v1/auth/token/", data={"username": "anna", "password": f"wrong{n}"}).status_code for n in range(12)
    ]
    right = guesser.post("/api/v1/auth/token/", data={"username": "anna", "password": PASSWORD})
    print(f"2 12 wrong passwords for anna: {counts(codes)}; then the right one: {right.status_code}")
    for command in (["axes_reset_username", "anna"], ["axes_reset_ip", "127.0.0.2"]):
        subprocess.run([*manage, *command], env=env, check=True, capture_output=True, cwd=REPO)
    lifted = guesser.post("/api/v1/auth/token/", data={"username": "anna", "password": PASSWORD})
    print(f"2 after manage.py axes_reset_username / axes_reset_ip, the right password: {lifted.status_code}")

    forger = client(base, "127.0.0.3")
    codes = [
        forger.get("/api/v1/me/", headers={"Authorization": f"Token {secrets.token_hex(32)}"}).status_code for _ in range(40)
    ]
    print(f"2 40 guessed tokens: {counts(codes)}")
    print(f"2 anna's real token from another address meanwhile: {api.get('/api/v1/me/').status_code}")


def main() -> None:
    shared_cache = empty_redis(CACHE_URL)
    with tempfile.TemporaryDirectory(prefix="security-probe-") as tmp:
        env = dict(
            os.environ,
            DATABASE_URL=f"sqlite:///{tmp}/site.sqlite3",
            MEDIA_ROOT=f"{tmp}/media",
            DEBUG="0",
            SECRET_KEY=secrets.token_urlsafe(50),
            ALLOWED_HOSTS="127.0.0.1",
            BENCHFORGE_SSL_REDIRECT="0",
            BENCHFORGE_SECURE_COOKIES="0",
            PYTHONPATH=str(REPO),
        )
        env.pop("CELERY_BROKER_URL", None)
        env.pop("CACHE_URL", None)
        if shared_cache:
            env["CACHE_URL"] = CACHE_URL
        manage = [sys.executable, str(REPO / "manage.py")]
        subprocess.run([*manage, "migrate", "--noinput"], env=env, check=True, capture_output=True, cwd=REPO)
        setup = subprocess.run([*manage, "shell", "-c", SETUP], env=env, check=True, capture_output=True, text=True, cwd=REPO)
        item_id = int(setup.stdout.split()[-1])
        workers = 3 if shared_cache else 1
        print(
            f"gunicorn, DEBUG=0, SQLite, {workers} worker(s) x 4 threads, cache: {CACHE_URL if shared_cache else 'per process'}"
        )
        log = Path(tmp) / "server.log"
        server, port = serve("benchforge.wsgi:application", env, workers=workers, threads=4, options=["--timeout", "60"], log=log)
        base = f"http://127.0.0.1:{port}"
        try:
            probe(base, item_id, manage, env)
        finally:
            server.terminate()
            server.wait(timeout=20)
            if shared_cache:
                empty_redis(CACHE_URL)
        errors = log.read_text().count("Traceback")
        print(f"server log: {errors} traceback(s)")


if __name__ == "__main__":
    main()
