"""The researcher's Label Studio page and the `labelstudio` management command."""

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Item
from benchforge.errors import DomainError
from jobs.models import Job
from labelstudio import services as lss
from labelstudio.client import LabelStudioError
from labelstudio.models import LabelStudioConnection, LabelStudioLink

from .samples import annotate, region

pytestmark = pytest.mark.django_db


def test_only_researchers_see_the_page(client_for, benchmark, annotator, reviewer):
    for user in (annotator, reviewer):
        assert client_for(user).get(f"/b/{benchmark.slug}/labelstudio/").status_code == 403
        assert client_for(user).post(f"/b/{benchmark.slug}/labelstudio/push/", {"title": "x"}).status_code == 403


def test_a_project_is_unlinked_from_the_page_and_a_deleted_one_is_marked(client_for, benchmark, researcher, annotator):
    from django.utils import timezone

    link = LabelStudioLink.objects.create(
        benchmark=benchmark, url="http://ls.example.org", project_id=7, title="Old round", gone_at=timezone.now()
    )
    page = client_for(researcher).get(f"/b/{benchmark.slug}/labelstudio/").content.decode()
    assert "Deleted in Label Studio" in page and f"/b/{benchmark.slug}/labelstudio/{link.pk}/unlink/" in page
    assert f"/b/{benchmark.slug}/labelstudio/{link.pk}/pull/" not in page  # nothing to pull from it
    assert client_for(annotator).post(f"/b/{benchmark.slug}/labelstudio/{link.pk}/unlink/").status_code == 403
    response = client_for(researcher).post(f"/b/{benchmark.slug}/labelstudio/{link.pk}/unlink/")
    assert response.status_code == 302 and not LabelStudioLink.objects.filter(pk=link.pk).exists()


def test_page_says_whether_the_token_is_set_and_never_shows_it(client_for, benchmark, researcher, monkeypatch):
    monkeypatch.delenv("LABEL_STUDIO_API_KEY", raising=False)
    monkeypatch.delenv("LABEL_STUDIO_URL", raising=False)
    page = client_for(researcher).get(f"/b/{benchmark.slug}/labelstudio/").content.decode()
    assert "LABEL_STUDIO_API_KEY</code>" in page and "is not set on the benchmark server" in page
    assert "none — enter a URL" in page

    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "a-secret-token-value")
    monkeypatch.setenv("LABEL_STUDIO_URL", "http://ls.example:8080")
    page = client_for(researcher).get(f"/b/{benchmark.slug}/labelstudio/").content.decode()
    assert "is set" in page and "a-secret-token-value" not in page
    assert "http://ls.example:8080" in page and "(from LABEL_STUDIO_URL)" in page


def test_connection_names_only_label_studio_variables(client_for, benchmark, researcher, fake_dns):
    fake_dns({"ls.team": "93.184.216.34"})  # a public address
    client = client_for(researcher)
    response = client.post(f"/b/{benchmark.slug}/labelstudio/connection/", {"url": "", "token_env": "SECRET_KEY"}, follow=True)
    assert "Name a variable starting with LABEL_STUDIO_" in response.content.decode()
    assert not LabelStudioConnection.objects.exists()
    with pytest.raises(DomainError, match="LABEL_STUDIO_"):
        lss.save_connection(benchmark, url="", token_env="DATABASE_URL", user=researcher)

    form = {"url": "http://ls.team:8080", "token_env": "LABEL_STUDIO_TEAM_A"}
    client.post(f"/b/{benchmark.slug}/labelstudio/connection/", form)
    connection = LabelStudioConnection.objects.get(benchmark=benchmark)
    assert (connection.url, connection.token_env, connection.updated_by) == (form["url"], form["token_env"], researcher)


def test_no_url_anywhere_is_a_clear_error(benchmark, monkeypatch):
    monkeypatch.delenv("LABEL_STUDIO_URL", raising=False)
    with pytest.raises(LabelStudioError, match="No Label Studio URL for .*LABEL_STUDIO_URL"):
        lss.open_client(benchmark)


@pytest.mark.labelstudio
def test_push_and_pull_from_the_page(
    ls_env, annotator_api, client_for, benchmark, researcher, items, django_capture_on_commit_callbacks
):
    client = client_for(researcher)
    with django_capture_on_commit_callbacks(execute=True):  # the job is sent once the request commits
        form = {"title": "From the page", "task": "chart", "status": ""}
        response = client.post(f"/b/{benchmark.slug}/labelstudio/push/", form)
    job = Job.objects.get(kind="labelstudio_push")
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.result["pushed"] == 4, job.message  # eager Celery: ran in the request

    link = LabelStudioLink.objects.get()
    page = client.get(f"/b/{benchmark.slug}/labelstudio/").content.decode()
    assert "From the page" in page and link.project_url in page

    single = items["single"]
    annotate(annotator_api, link.tasks.get(item=single).task_id, region("reference_answer", "Pulled from the page."))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/b/{benchmark.slug}/labelstudio/{link.pk}/pull/")
    pull = Job.objects.get(kind="labelstudio_pull")
    assert pull.status == Job.Status.SUCCEEDED, pull.message
    assert response["Location"] == f"/jobs/{pull.pk}/" and pull.result["applied"] == 1
    assert Item.objects.get(pk=single.pk).reference_answer == "Pulled from the page."
    assert f"job #{pull.pk}" in client.get(f"/b/{benchmark.slug}/labelstudio/").content.decode()


@pytest.mark.labelstudio
def test_command_pushes_and_pulls(ls_env, annotator_api, benchmark, researcher, annotator, items, capsys):
    call_command(
        "labelstudio", "push", benchmark.slug, "--user", researcher.username, "--title", "Command", "--item", str(items["mcq"].pk)
    )
    assert "labelstudio_push succeeded: 1 pushed" in capsys.readouterr().out
    link = LabelStudioLink.objects.get(title="Command")
    annotate(annotator_api, link.tasks.get().task_id, region("reference_answer", "B, four bars."))
    call_command("labelstudio", "pull", benchmark.slug, "--user", researcher.username)
    assert "labelstudio_pull succeeded: 1 applied," in capsys.readouterr().out
    assert Item.objects.get(pk=items["mcq"].pk).reference_answer == "B, four bars."

    with pytest.raises(CommandError, match="is not a researcher"):
        call_command("labelstudio", "pull", benchmark.slug, "--user", annotator.username)
    with pytest.raises(CommandError, match="no Label Studio project of this benchmark is titled 'Nope'"):
        call_command("labelstudio", "pull", benchmark.slug, "--user", researcher.username, "--title", "Nope")


@pytest.mark.labelstudio
def test_command_fails_loudly_on_a_bad_token(ls_env, benchmark, researcher, items, monkeypatch):
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "0" * 40)
    with pytest.raises(CommandError, match="refused the access token"):
        call_command("labelstudio", "push", benchmark.slug, "--user", researcher.username, "--title", "Bad token")


def _waiting(benchmark, researcher, *, status="draft"):
    """An item whose task waits for a decision on its reference answer (a conflict)."""
    from annotation.services import create_item
    from labelstudio.adapter import field_values

    item = create_item(
        benchmark,
        task=benchmark.tasks.first(),
        user=researcher,
        question="Which chart?",
        reference_answer="Here now.",
        criteria=[{"kind": "exact", "text": "Left."}],
    )
    link = LabelStudioLink.objects.create(benchmark=benchmark, url="http://ls.example.org", project_id=9, title="Decide")
    values = field_values(
        {"question": "Which chart?", "reference_answer": "Agreed.", "criteria": [{"kind": "exact", "text": "Left."}]}
    )
    row = link.tasks.create(
        item=item,
        task_id=71,
        pushed_version=1,
        baseline=values,
        shown=values,
        pending={
            "reference_answer": {
                "reason": "conflict",
                "base": "Agreed.",
                "here": "Here now.",
                "proposals": [{"annotation": 501, "annotator": "ann@example.com", "value": "From Label Studio."}],
            }
        },
    )
    return link, row, item


def test_a_conflict_is_decided_on_the_projects_page(client_for, benchmark, researcher, annotator):
    link, row, item = _waiting(benchmark, researcher)
    url = f"/b/{benchmark.slug}/labelstudio/{link.pk}/decisions/"
    assert client_for(annotator).get(url).status_code == 403
    page = client_for(researcher).get(f"/b/{benchmark.slug}/labelstudio/").content.decode()
    assert "1 task to decide" in page and url in page
    page = client_for(researcher).get(url).content.decode()
    assert "Here now." in page and "From Label Studio." in page and "Agreed." in page and "changed on both sides" in page

    # Taking Label Studio's value: the item takes it (the researcher's edit), nothing waits any more.
    form = {"task": "71", "how_reference_answer": "labelstudio:501"}
    response = client_for(researcher).post(url, form, follow=True)
    assert "decided 1 value" in response.content.decode()
    assert Item.objects.get(pk=item.pk).reference_answer == "From Label Studio." and Item.objects.get(pk=item.pk).version == 2
    assert link.tasks.get().pending == {}
    # Sent again (a double click): nothing is waiting for that task any more.
    assert client_for(researcher).post(url, form).status_code == 404


def test_a_typed_decision_is_checked_and_bad_values_change_nothing(client_for, benchmark, researcher):
    link, row, item = _waiting(benchmark, researcher)
    url = f"/b/{benchmark.slug}/labelstudio/{link.pk}/decisions/"
    for bad in (
        {"task": "71", "how_reference_answer": "edit", "value_reference_answer": "   "},
        {"task": "9" * 40},
        {"task": "x"},
    ):
        response = client_for(researcher).post(url, bad, follow=True)
        assert response.status_code in (200, 404)
    assert Item.objects.get(pk=item.pk).version == 1 and link.tasks.get().pending != {}
    client_for(researcher).post(url, {"task": "71", "how_reference_answer": "edit", "value_reference_answer": "Typed here."})
    assert Item.objects.get(pk=item.pk).reference_answer == "Typed here." and link.tasks.get().pending == {}


def test_the_rule_for_reviewed_items_is_set_per_project(client_for, benchmark, researcher, annotator):
    link = LabelStudioLink.objects.create(benchmark=benchmark, url="http://ls.example.org", project_id=3, title="Rule")
    assert link.reviewed == LabelStudioLink.Reviewed.HOLD  # the default keeps reviewed work as it was reviewed
    url = f"/b/{benchmark.slug}/labelstudio/{link.pk}/reviewed/"
    assert client_for(annotator).post(url, {"reviewed": "review"}).status_code == 403
    client_for(researcher).post(url, {"reviewed": "review"})
    assert LabelStudioLink.objects.get(pk=link.pk).reviewed == "review"
    client_for(researcher).post(url, {"reviewed": "anything"})
    assert LabelStudioLink.objects.get(pk=link.pk).reviewed == "review"
