"""Production settings: `check --deploy` is clean, HTTPS settings are on by default with documented
toggles, refused forms never redirect off-site."""

import os
import secrets
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT


def _manage(*args, **env):
    # A production environment: none of the test run's development switches.
    full = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "DJANGO_ALLOW_ASYNC_UNSAFE")}
    full.update(DEBUG="0", SECRET_KEY=secrets.token_urlsafe(50), ALLOWED_HOSTS="bench.example.org", **env)
    return subprocess.run([sys.executable, "manage.py", *args], cwd=REPO_ROOT, env=full, capture_output=True, text=True)


def test_check_deploy_reports_nothing():
    result = _manage("check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues (0 silenced)" in result.stdout


def test_https_settings_and_their_toggles():
    code = (
        "from django.conf import settings as s; print(s.SECURE_SSL_REDIRECT, s.SESSION_COOKIE_SECURE, "
        "s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS > 0, getattr(s, 'SECURE_PROXY_SSL_HEADER', None))"
    )
    assert _manage("shell", "--no-imports", "-c", code).stdout.split() == ["True", "True", "True", "True", "None"]
    behind_proxy = _manage("shell", "--no-imports", "-c", code, BENCHFORGE_SSL_REDIRECT="0", BENCHFORGE_PROXY_SSL_HEADER="1")
    assert behind_proxy.stdout.strip() == "False True True True ('HTTP_X_FORWARDED_PROTO', 'https')"


def test_production_refuses_the_development_secret_key():
    full = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=REPO_ROOT, env={**full, "DEBUG": "0"}, capture_output=True, text=True
    )
    assert result.returncode != 0 and "SECRET_KEY is not set" in result.stderr


@pytest.mark.django_db
def test_a_refused_form_never_redirects_to_another_site(client_for, annotator, benchmark):
    from annotation import services

    client = client_for(annotator)
    item = services.create_item(benchmark, task=benchmark.tasks.get(slug="counting"), user=annotator)
    # A domain error on a POST (here: no version given) goes back to the page the form came from...
    draft_url = f"/b/{benchmark.slug}/items/"
    back = client.post(f"/b/{benchmark.slug}/items/{item.pk}/withdraw/", {"version": "x"}, HTTP_REFERER=draft_url)
    assert back.status_code == 302 and back["Location"] == draft_url
    # ...but only when that page is on this site.
    for referer in ("https://evil.example/phish", "//evil.example/x", "javascript:alert(1)"):
        response = client.post(f"/b/{benchmark.slug}/items/{item.pk}/withdraw/", {"version": "x"}, HTTP_REFERER=referer)
        assert response.status_code == 302 and response["Location"] == "/"
