"""Releases under simultaneous requests (the race kit, tests/races.py; Postgres only): freeze and
build at once, build pressed twice, the same version created at once. Each is repeated over several
trials, since one trial can happen to run in a harmless order; the invariants are asked in SQL."""

import hashlib
from functools import partial
from pathlib import Path

import pytest
from django.core.files.storage import default_storage

from exports.models import Release
from tests.races import broken, race, rows, server_errors

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("postgres")]
API = "/api/v1/benchmarks/demo/releases/"


def sha256_of(release: Release, kind: str) -> str:
    path = Path(default_storage.path(release.files.get(kind=kind).storage_name))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_freeze_and_build_at_once_never_rebuild_a_frozen_release(built, researcher, api_for):
    for trial in range(6):
        release = built(f"1.{trial}.0")
        clients = [api_for(researcher) for _ in range(6)]
        calls = [partial(c.post, f"{API}{release.version}/{'build' if n % 2 else 'freeze'}/") for n, c in enumerate(clients)]
        results = race(calls)
        assert server_errors(results) == [], f"trial {trial}"
        release.refresh_from_db()
        assert broken() == {}, f"trial {trial}"
        if release.status != Release.Status.FROZEN:  # the builds went first: freeze it now
            assert release.status == Release.Status.BUILT, f"trial {trial}: {release.status}"
            assert clients[0].post(f"{API}{release.version}/freeze/").status_code == 200
            release.refresh_from_db()
        frozen = {f.kind: f.sha256 for f in release.files.all()}
        assert sha256_of(release, "public.tar.gz") == frozen["public.tar.gz"]
        # Frozen means frozen, whoever asks next.
        assert clients[1].post(f"{API}{release.version}/build/").status_code == 409
        assert clients[2].patch(f"{API}{release.version}/", {"notes": "later"}, format="json").status_code == 409
        release.refresh_from_db()
        assert release.status == Release.Status.FROZEN and {f.kind: f.sha256 for f in release.files.all()} == frozen
        assert sha256_of(release, "public.tar.gz") == frozen["public.tar.gz"]


def test_build_pressed_twice_runs_one_build_and_the_release_names_the_job_that_built_it(built, researcher, api_for):
    for trial in range(4):
        release = built(f"2.{trial}.0")
        clients = [api_for(researcher) for _ in range(6)]
        results = race([partial(c.post, f"{API}{release.version}/build/") for c in clients])
        assert server_errors(results) == [], f"trial {trial}"
        assert {r.status for r in results} == {200}, [(r.status, r.json.get("detail")) for r in results]
        release.refresh_from_db()
        assert release.status == Release.Status.BUILT
        assert broken() == {}, f"trial {trial}"
        # Every press answered with the job that was building when it came (it joined that build).
        jobs = set(rows("SELECT id FROM jobs_job WHERE kind = 'release_build' AND params->>'release' = %s", [str(release.pk)]))
        assert {(r.json["job"],) for r in results} <= jobs


def test_the_same_version_created_at_once_is_one_release_and_clear_answers(benchmark, accepted, researcher, api_for):
    clients = [api_for(researcher) for _ in range(8)]
    # The same request sent several times (a double click): one release, the same answer to each.
    same = race([partial(c.post, API, {"version": "3.0.0", "notes": "n"}, format="json") for c in clients])
    assert server_errors(same) == []
    assert sorted(r.status for r in same) == [200] * 7 + [201], [(r.status, r.json.get("detail")) for r in same]
    assert {r.json["version"] for r in same} == {"3.0.0"}
    assert rows("SELECT count(*) FROM exports_release WHERE version = '3.0.0'") == [(1,)]
    assert rows("SELECT count(*) FROM jobs_job WHERE kind = 'release_build'") == [(1,)]  # one build, however many requests
    assert broken() == {}
    # Different requests for one version: one is created, each other is told which release exists.
    different = race(
        [partial(c.post, API, {"version": "4.0.0", "notes": f"request {n}"}, format="json") for n, c in enumerate(clients)]
    )
    assert server_errors(different) == []
    assert sorted(r.status for r in different) == [201] + [409] * 7, [(r.status, r.json.get("detail")) for r in different]
    (created,) = [r for r in different if r.status == 201]
    for refused in (r for r in different if r.status == 409):
        assert refused.json["code"] == "exists" and refused.json["existing"]["version"] == "4.0.0"
        assert "already has a release 4.0.0" in refused.json["detail"]
    assert rows("SELECT count(*), min(notes) FROM exports_release WHERE version = '4.0.0'") == [(1, created.json["notes"])]
    assert broken() == {}
