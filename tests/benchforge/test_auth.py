"""Brute force: login lockouts (form and API) that a researcher can lift, throttled token guessing,
hashed expiring tokens, password rules."""

import io
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone
from knox.models import AuthToken
from knox.settings import CONSTANTS

from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


@pytest.fixture
def limits(settings):
    settings.AXES_FAILURE_LIMIT = 5
    settings.BENCHFORGE_TOKEN_FAILURE_LIMIT = 8
    return settings


def _form_login(client, username, password, ip="10.1.1.1"):
    return client.post("/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=ip)


def test_login_form_locks_after_the_limit_and_a_researcher_lifts_it(limits, annotator, researcher, client_for):
    client = Client()
    for _ in range(4):
        response = _form_login(client, "anna", "wrong-guess")
        assert response.status_code == 200 and "Wrong username or password" in response.content.decode()
    assert _form_login(client, "anna", "wrong-guess").status_code == 429  # the 5th failure locks
    locked = _form_login(client, "anna", PASSWORD)  # and then the right password no longer helps
    assert locked.status_code == 429 and "Too many failed logins" in locked.content.decode()
    assert "_auth_user_id" not in client.session
    # Another address cannot use the account either: the username itself is locked.
    assert _form_login(Client(), "anna", PASSWORD, ip="10.9.9.9").status_code == 429

    page = client_for(researcher).get("/accounts/lockouts/").content.decode()
    assert "anna" in page and "10.1.1.1" in page
    client_for(researcher).post("/accounts/lockouts/", {"kind": "username", "value": "anna"})
    client_for(researcher).post("/accounts/lockouts/", {"kind": "address", "value": "10.1.1.1"})
    assert _form_login(client, "anna", PASSWORD).status_code == 302
    assert client.session["_auth_user_id"] == str(annotator.pk)


def test_only_researchers_may_lift_lockouts(annotator, client_for):
    assert client_for(annotator).get("/accounts/lockouts/").status_code == 403
    assert client_for(annotator).post("/accounts/lockouts/", {"kind": "username", "value": "x"}).status_code == 403


def test_one_address_spraying_many_accounts_is_locked(limits, make_user):
    for n in range(5):
        make_user("annotator", f"user{n}")
        _form_login(Client(), f"user{n}", "wrong-guess", ip="10.2.2.2")
    assert _form_login(Client(), "user0", PASSWORD, ip="10.2.2.2").status_code == 429
    assert _form_login(Client(), "user0", PASSWORD, ip="10.3.3.3").status_code == 302


def test_api_token_login_locks_like_the_form(limits, annotator):
    client = Client()
    for _ in range(4):
        response = client.post("/api/v1/auth/token/", {"username": "anna", "password": "nope"}, REMOTE_ADDR="10.4.4.4")
        assert response.status_code == 400 and "Unable to log in" in response.json()["detail"]
    assert client.post("/api/v1/auth/token/", {"username": "anna", "password": "nope"}, REMOTE_ADDR="10.4.4.4").status_code == 429
    locked = client.post("/api/v1/auth/token/", {"username": "anna", "password": PASSWORD}, REMOTE_ADDR="10.4.4.4")
    assert locked.status_code == 429 and locked.json()["code"] == "locked_out"
    assert "Too many failed logins" in locked.json()["detail"] and not AuthToken.objects.exists()


def test_login_attempts_are_throttled_per_address(monkeypatch, annotator):
    from rest_framework.throttling import ScopedRateThrottle

    monkeypatch.setitem(ScopedRateThrottle.THROTTLE_RATES, "login", "3/min")
    client = Client()
    codes = [
        client.post("/api/v1/auth/token/", {"username": f"u{n}", "password": "x"}, REMOTE_ADDR="10.5.5.5").status_code
        for n in range(5)
    ]
    assert codes == [400, 400, 400, 429, 429]


def test_guessed_tokens_are_throttled_per_address(limits, annotator, api_for):
    client = Client()
    for n in range(8):
        response = client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {n:064x}", REMOTE_ADDR="10.6.6.6")
        assert response.status_code == 401
    throttled = client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {9:064x}", REMOTE_ADDR="10.6.6.6")
    assert throttled.status_code == 429 and "Too many invalid API tokens" in throttled.json()["detail"]
    assert int(throttled["Retry-After"]) > 0
    # Other addresses are not affected; X-Forwarded-For from a client is not trusted.
    assert api_for(annotator).get("/api/v1/me/", REMOTE_ADDR="10.7.7.7").status_code == 200
    spoofed = client.get(
        "/api/v1/me/", HTTP_AUTHORIZATION=f"Token {10:064x}", REMOTE_ADDR="10.6.6.6", HTTP_X_FORWARDED_FOR="1.2.3.4"
    )
    assert spoofed.status_code == 429


def test_malformed_tokens_are_a_clean_401(annotator):
    client = Client()
    for header in ("Token", "Token a b", "Token \u00e9\u00e9", "Token " + "x" * 5000, "Token " + "ab" * 32 + "\x00"):
        assert client.get("/api/v1/me/", HTTP_AUTHORIZATION=header).status_code == 401


def test_tokens_are_stored_hashed_expire_and_can_be_revoked(annotator, settings):
    client = Client()
    issued = client.post("/api/v1/auth/token/", {"username": "anna", "password": PASSWORD}).json()
    token = issued["token"]
    row = AuthToken.objects.get(user=annotator)
    assert token not in (row.digest, row.token_key) and len(row.token_key) < len(token)  # only a prefix and a hash
    assert abs(row.expiry - (timezone.now() + settings.REST_KNOX["TOKEN_TTL"])) < timedelta(minutes=1)
    assert client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {token}").json()["username"] == "anna"

    AuthToken.objects.filter(pk=row.pk).update(expiry=timezone.now() - timedelta(seconds=1))
    assert client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {token}").status_code == 401

    token = client.post("/api/v1/auth/token/", {"username": "anna", "password": PASSWORD}).json()["token"]
    assert client.post("/api/v1/auth/token/revoke/", HTTP_AUTHORIZATION=f"Token {token}").status_code == 204
    assert client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {token}").status_code == 401


def test_an_api_call_reads_only_its_own_token_and_a_new_token_clears_the_expired_ones(annotator):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from benchforge.auth import create_token_for

    stale = [create_token_for(annotator) for _ in range(3)]
    AuthToken.objects.filter(user=annotator).update(expiry=timezone.now() - timedelta(days=1))
    token = create_token_for(annotator)
    assert AuthToken.objects.filter(user=annotator).count() == 1  # the expired three went with it

    for _ in range(3):
        create_token_for(annotator)
    client = Client()
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {token}").json()["username"] == "anna"
    token_reads = [q["sql"] for q in queries if "knox_authtoken" in q["sql"]]
    assert len(token_reads) == 1, token_reads  # the token's own row (with its user), not the user's others
    # An expired token is refused, and deleted, when it is used; the user's others are left alone.
    assert client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {stale[0]}").status_code == 401
    AuthToken.objects.filter(token_key=token[: CONSTANTS.TOKEN_KEY_LENGTH]).update(expiry=timezone.now())
    assert client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {token}").status_code == 401
    assert AuthToken.objects.filter(user=annotator).count() == 3


@pytest.mark.parametrize(
    "password, reason", [("1", "too short"), ("12345678901", "entirely numeric"), ("password123", "too common")]
)
def test_create_user_refuses_weak_passwords(monkeypatch, password, reason):
    from django.contrib.auth import get_user_model

    monkeypatch.setenv("NEW_PW", password)
    with pytest.raises(CommandError, match=reason):
        call_command("create_user", "weak", "--role", "annotator", "--password-env", "NEW_PW", "--token", stdout=io.StringIO())
    assert not get_user_model().objects.filter(username="weak").exists() and not AuthToken.objects.exists()


def test_create_user_prints_a_token_once(monkeypatch):
    monkeypatch.setenv("NEW_PW", "a-long-and-unusual-passphrase")
    out = io.StringIO()
    call_command("create_user", "strong", "--role", "annotator", "--password-env", "NEW_PW", "--token", stdout=out)
    token = out.getvalue().split("API token (shown once): ")[1].split()[0]
    assert Client().get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {token}").json()["username"] == "strong"


def test_anyone_changes_their_password_which_ends_other_sessions_and_tokens(annotator):
    api = Client()
    token = api.post("/api/v1/auth/token/", {"username": "anna", "password": PASSWORD}).json()["token"]
    elsewhere, here = Client(), Client()
    elsewhere.force_login(annotator)
    here.force_login(annotator)
    page = here.get("/").content.decode()
    assert 'href="/accounts/password/"' in page  # the username in the header leads there

    refused = here.post("/accounts/password/", {"old_password": "wrong", "new_password1": "1", "new_password2": "1"})
    assert refused.status_code == 200 and 'id="old-password-error"' in refused.content.decode()
    weak = here.post("/accounts/password/", {"old_password": PASSWORD, "new_password1": "anna12", "new_password2": "anna12"})
    assert "too short" in weak.content.decode() and annotator.__class__.objects.get(pk=annotator.pk).check_password(PASSWORD)

    new = "a-much-better-phrase-42"
    done = here.post("/accounts/password/", {"old_password": PASSWORD, "new_password1": new, "new_password2": new}, follow=True)
    assert "Password changed: your other sessions are logged out and 1 API token(s) revoked." in done.content.decode()
    assert here.get("/").status_code == 200  # this session stays logged in
    assert elsewhere.get("/")["Location"].startswith("/accounts/login/")  # the other one does not
    assert api.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {token}").status_code == 401
    old_login = Client().post("/accounts/login/", {"username": "anna", "password": PASSWORD})
    new_login = Client().post("/accounts/login/", {"username": "anna", "password": new})
    assert old_login.status_code == 200 and new_login.status_code == 302
