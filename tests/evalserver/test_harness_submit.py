"""`benchforge-harness submit` against a running server (pytest-django's live server): it reads the
release's manifest, posts the file with the team's token, and says what the server answered."""

import pytest
from django.core.files.storage import default_storage

from benchforge_harness import cli
from evalserver.models import Submission
from exports.models import ReleaseFile
from tests.evalserver.helpers import lines

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_image_indexes")]


def test_the_harness_submits_with_the_bundle_manifest_and_shows_refusals(window, live_server, tmp_path, monkeypatch, capsys):
    from tests.evalserver.test_windows import sign_up

    _, token = sign_up(window)
    public = window.release.files.get(kind=ReleaseFile.Kind.PUBLIC_TAR)
    bundle = tmp_path / "bundle.tar.gz"
    with default_storage.open(public.storage_name, "rb") as handle:
        bundle.write_bytes(handle.read())
    good = tmp_path / "good.jsonl"
    good.write_bytes(lines(window, model="harness-vlm"))
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(lines(window)[: -len(lines(window).splitlines()[-1]) - 1])  # the last item left out
    monkeypatch.setenv("BENCHFORGE_TEAM_TOKEN", token)
    args = ["submit", "--server", live_server.url, "--window", str(window.pk), "--release", str(bundle)]

    assert cli.main([*args, "--predictions", str(bad)]) == 1
    said = capsys.readouterr().err
    assert "refused (400)" in said and "have no line" in said and window.items[-1] in said
    assert Submission.objects.count() == 0

    assert cli.main([*args, "--predictions", str(good)]) == 0
    assert "accepted as submission" in capsys.readouterr().err
    assert Submission.objects.get().model_name == "harness-vlm"

    monkeypatch.setenv("BENCHFORGE_TEAM_TOKEN", "wrong")
    assert cli.main([*args, "--predictions", str(good)]) == 1
    assert "refused (401)" in capsys.readouterr().err


def test_the_harness_refuses_another_release_before_the_server_reads_the_file(window, live_server, tmp_path, monkeypatch, capsys):
    import json

    from tests.evalserver.test_windows import sign_up

    _, token = sign_up(window)
    folder = tmp_path / "other"
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps({"name": "other", "version": "9.0.0", "files": {}}))
    good = tmp_path / "good.jsonl"
    good.write_bytes(lines(window))
    monkeypatch.setenv("BENCHFORGE_TEAM_TOKEN", token)
    status = cli.main(
        ["submit", "--server", live_server.url, "--window", str(window.pk), "--release", str(folder), "--predictions", str(good)]
    )
    assert status == 1 and "this window scores demo 1.0.0" in capsys.readouterr().err
    assert Submission.objects.count() == 0
