"""A rewrite batch's state is its job's state: a batch whose job failed shows "Failed" with the reason
on its page and in the list, with Resume on its page; a batch whose endpoint cannot be called is
refused before anything is stored or sent."""

import pytest
from django.urls import reverse

from benchforge.errors import DomainError
from jobs import services as jobs
from jobs.models import Job
from rewrite import services
from rewrite.models import RewriteBatch
from tests.rewrite.conftest import KEY_ENV, five, question_of

pytestmark = pytest.mark.django_db(transaction=True)


def batch_page(client, benchmark, batch) -> str:
    return client.get(reverse("rewrite-batch", args=[benchmark.slug, batch.number])).content.decode()


def test_a_batch_whose_job_died_shows_failed_with_the_reason_and_resume(
    declare, fake_llm, benchmark, seeds, zh_template, researcher, client, monkeypatch
):
    from rewrite.services import batches

    declare()
    fake_llm.script("glm-4", lambda body: five(question_of(body)))
    real_parsed = batches._parsed

    def dying(*args, **kwargs):  # the job dies before the batch records how it ended
        raise RuntimeError("the worker ran out of memory")

    monkeypatch.setattr(batches, "_parsed", dying)
    batch = services.start_batch(benchmark, user=researcher, endpoint="glm", template_version=zh_template)
    batch.refresh_from_db()
    assert batch.job.status == Job.Status.FAILED

    client.force_login(researcher)
    page = batch_page(client, benchmark, batch)
    assert page.split('id="batch-state">')[1].split("<")[0] == "Failed"
    assert "the worker ran out of memory" in page.split('id="batch-reason">')[1].split("</p>")[0]
    assert 'id="batch-resume"' in page and 'value="resume"' in page
    listing = client.get(reverse("rewrite-home", args=[benchmark.slug])).content.decode()
    row = listing.split('id="batch-list"')[1].split("</table>")[0]
    assert "Failed" in row and "Running" not in row and "the worker ran out of memory" in row

    monkeypatch.setattr(batches, "_parsed", real_parsed)
    jobs.resume(batch.job, user=researcher)
    batch.refresh_from_db()
    assert batch.job.status == Job.Status.SUCCEEDED, batch.job.message
    page = batch_page(client, benchmark, batch)
    assert page.split('id="batch-state">')[1].split("<")[0] == "Finished"
    assert 'id="batch-resume"' not in page and 'id="batch-reason"' not in page


def test_a_batch_whose_endpoint_cannot_be_called_is_refused_before_it_starts(
    declare, fake_llm, benchmark, seeds, zh_template, researcher, monkeypatch
):
    declare()
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(DomainError, match=KEY_ENV):
        services.start_batch(benchmark, user=researcher, endpoint="glm", template_version=zh_template)
    assert not RewriteBatch.objects.exists() and not Job.objects.exists() and not fake_llm.requests()
