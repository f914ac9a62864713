"""`make screenshots`: the demo's main pages at a laptop's and a phone's width, as PNG files.

A fresh demo (its own SQLite file and media under a temporary folder) is served by the
development server on a free loopback port; headless Chromium logs in as each role and saves
the dashboard, the item editor, the review page, a QC run and the release pages at 1280x800 and
390x844 (and the phone's menu opened) into var/screenshots/. Not part of `make test`: it is for
people to look at.

    python -m demo.screenshots [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
SLUG = "alignmmbench-demo"
VIEWPORTS = {"1280": {"width": 1280, "height": 800}, "390": {"width": 390, "height": 844}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def demo_server(folder: Path) -> tuple[subprocess.Popen, str, dict[str, str]]:
    """A seeded demo served on loopback: (process, base URL, {username: password})."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchforge.settings")
    django.setup()
    from demo.management.commands.seed_demo import DEMO_USERS

    env = {**os.environ, "BENCHFORGE_VAR_DIR": str(folder), "DEBUG": "1", "MEDIA_ROOT": str(folder / "media")}
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL"):  # the embedded runtime, whatever this shell has
        env.pop(name, None)
    manage = [sys.executable, str(REPO / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput", "-v0"], cwd=REPO, env=env, check=True)
    subprocess.run([*manage, "seed_demo"], cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
    port = free_port()
    log = open(folder / "server.log", "w")  # noqa: SIM115 - the server keeps it open while it runs
    proc = subprocess.Popen(
        [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/accounts/login/", timeout=2).status_code == 200:
                return proc, base, {name: password for name, _, password in DEMO_USERS}
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.terminate()
    raise SystemExit(f"the demo server did not come up within 60 s: {(folder / 'server.log').read_text()[-2000:]}")


def first_link(page, path: str, selector: str) -> str | None:
    page.goto(path)
    link = page.locator(selector).first
    return link.get_attribute("href") if link.count() else None


def pages_for(page, role: str) -> dict[str, str]:
    """{name: path} of the pages to shoot for a role, found the way a person would find them."""
    shots = {"dashboard": f"/b/{SLUG}/"}
    # The editor on a draft (what an annotator works on), else on any item.
    editor = first_link(page, f"/b/{SLUG}/items/?status=draft", "#items tbody a[href*='/items/']")
    editor = editor or first_link(page, f"/b/{SLUG}/items/", "#items tbody a[href*='/items/']")
    if editor:
        shots["editor"] = editor
    if role in ("reviewer", "researcher"):
        review = first_link(page, f"/b/{SLUG}/review/queue/", "#review-queue a[href*='/review/']")
        if review:
            shots["review"] = review
    if role == "researcher":
        shots["qc-run"] = f"/b/{SLUG}/qc/runs/1/"
    release = first_link(page, f"/b/{SLUG}/releases/", "main table a[href*='/releases/']")
    if release:
        shots["release"] = release
        shots["release-card"] = release + "card/"
    return shots


def shoot(base: str, passwords: dict[str, str], out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("BENCHFORGE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    saved = []
    with sync_playwright() as pw:
        # executable_path: Debian's chromium, never a browser Playwright would download.
        browser = pw.chromium.launch(executable_path=chromium, args=["--headless", "--no-sandbox", "--disable-gpu"])
        for role in ("annotator", "reviewer", "researcher"):
            for width, viewport in VIEWPORTS.items():
                context = browser.new_context(base_url=base, viewport=viewport)
                page = context.new_page()
                page.goto("/accounts/login/")
                page.fill("input[name=username]", role)
                page.fill("input[name=password]", passwords[role])
                page.click("main button[type=submit]")
                page.wait_for_load_state()
                for name, path in pages_for(page, role).items():
                    page.goto(path)
                    page.wait_for_load_state("networkidle")
                    target = out / f"{name}-{role}-{width}.png"
                    page.screenshot(path=str(target), full_page=True)
                    saved.append(target)
                    if width == "390" and name == "dashboard":
                        page.click("#menu-toggle")
                        target = out / f"menu-{role}-{width}.png"
                        page.screenshot(path=str(target))
                        saved.append(target)
                context.close()
        browser.close()
    return saved


def main(argv=None) -> None:
    import logging

    logging.getLogger("httpx").setLevel(logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "var" / "screenshots")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="benchforge-screenshots-") as tmp:
        proc, base, passwords = demo_server(Path(tmp))
        try:
            saved = shoot(base, passwords, args.out)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(f"{len(saved)} screenshots in {args.out}:")
    for path in saved:
        print(f"  {path.name}")


if __name__ == "__main__":
    main()
