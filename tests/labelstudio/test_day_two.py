"""What the sync must survive the second time (in process, against the in-memory Label Studio of
the sequence test): a pull killed half way and resumed, a pull after it, a re-push after an item
was deleted here, two annotators of one task."""

import pytest

from annotation.models import Item, ItemRevision
from annotation.services import create_item
from jobs import services as jobs
from jobs.models import Job
from labelstudio import services as lss
from labelstudio.models import LabelStudioLink
from labelstudio.services import pull as pull_service
from labelstudio.services import push as push_service

from .fake_server import FakeLabelStudio

pytestmark = pytest.mark.django_db


@pytest.fixture
def server(monkeypatch):
    server = FakeLabelStudio()
    for module in (push_service, pull_service):
        monkeypatch.setattr(module, "open_client", lambda *args, **kwargs: server)
    return server


@pytest.fixture
def five(benchmark, researcher):
    task = benchmark.tasks.first()
    return [
        create_item(
            benchmark,
            task=task,
            user=researcher,
            question=f"Question {n}?",
            reference_answer=f"Answer {n}.",
            criteria=[{"kind": "soft", "text": f"Says {n}."}],
        )
        for n in range(5)
    ]


def edit(server, task_id, by=1, **values):
    """An annotation from the task's current pre-fill, as the editor saves it."""
    prefill = server.prefill(task_id)
    result = [
        {"from_name": name, "to_name": "question", "type": "textarea", "value": {"text": [text]}, "origin": "prediction-changed"}
        for name, text in values.items()
    ]
    return server.annotate(task_id, result, parent_prediction=prefill["id"], lead_time=0.0, by=by)


def push(benchmark, researcher, items):
    job = lss.push_items_to_labelstudio(benchmark, items, project_title="Day two", user=researcher)
    assert job.status == Job.Status.SUCCEEDED, job.message
    return job


def test_a_pull_killed_half_way_is_resumed_and_applies_each_annotation_once(server, benchmark, researcher, five, monkeypatch):
    link = LabelStudioLink.objects.get(pk=push(benchmark, researcher, five).result["link_id"])
    for row in link.tasks.all():
        edit(server, row.task_id, reference_answer=f"Better {row.item_id}.")
    real, seen = pull_service._pull_task, []

    def dies_on_the_third(row, *args, **kwargs):
        if len(seen) == 2:
            raise SystemExit("the worker was killed")
        seen.append(row.task_id)
        return real(row, *args, **kwargs)

    monkeypatch.setattr(pull_service, "_pull_task", dies_on_the_third)
    job = lss.create_pull(link, user=researcher)
    with pytest.raises(SystemExit):
        jobs.run_now(job)
    monkeypatch.setattr(pull_service, "_pull_task", real)
    job.refresh_from_db()
    Job.objects.filter(pk=job.pk).update(status=Job.Status.FAILED)  # what the job reaper makes of a dead worker
    resumed = jobs.run_now(jobs.requeue(job))
    assert resumed.status == Job.Status.SUCCEEDED, resumed.message
    assert resumed.result["applied"] == 5, resumed.result
    for item in five:
        assert Item.objects.get(pk=item.pk).reference_answer == f"Better {item.pk}."
        assert ItemRevision.objects.filter(item=item, action="labelstudio").count() == 1
    # The pull after it has nothing to do.
    again = lss.pull_from_labelstudio(link, user=researcher)
    assert again.result["already_pulled"] == 5 and again.result["applied"] == 0


def test_a_repush_after_an_item_was_deleted_here_adds_nothing_and_pulls_ignore_its_task(server, benchmark, researcher, five):
    link = LabelStudioLink.objects.get(pk=push(benchmark, researcher, five).result["link_id"])
    gone = five.pop()
    gone_task = link.tasks.get(item=gone).task_id
    Item.objects.filter(pk=gone.pk).delete()
    edit(server, gone_task, reference_answer="Nobody reads this.")
    again = push(benchmark, researcher, five)
    assert again.result["pushed"] == 0 and again.result["already_pushed"] == 4 and link.tasks.count() == 4
    assert len(server.projects[link.project_id]["tasks"]) == 5  # its task stays in Label Studio, with its annotation
    pulled = lss.pull_from_labelstudio(link, user=researcher)
    assert pulled.status == Job.Status.SUCCEEDED and pulled.result["errors"] == 0 and pulled.result["not_annotated"] == 4


def test_two_annotators_of_one_task_who_change_different_fields_are_both_applied(server, benchmark, researcher, five):
    link = LabelStudioLink.objects.get(pk=push(benchmark, researcher, five).result["link_id"])
    task = link.tasks.get(item=five[0]).task_id
    edit(server, task, by=1, reference_answer="Ann's answer.")
    edit(server, task, by=2, criterion_1_text="Bob's criterion.")
    pulled = lss.pull_from_labelstudio(link, user=researcher, several=lss.FLAG)
    assert pulled.result["applied"] == 1 and pulled.result["disagreements"] == 0, pulled.message
    item = Item.objects.get(pk=five[0].pk)
    assert item.reference_answer == "Ann's answer." and [c.text for c in item.criteria.all()] == ["Bob's criterion."]
    assert ItemRevision.objects.filter(item=item, action="labelstudio").count() == 1  # one version for both
