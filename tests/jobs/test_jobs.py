"""The job runner in one process: guarded state, resume and cancel (services, page and API),
summaries over every run, interrupted jobs, staged uploads and their sweep, the thread runner."""

import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.utils import timezone, translation
from django.utils.translation import gettext

from jobs import registry, runner
from jobs import services as jobs
from jobs.models import Job, JobEntry
from jobs.staging import stage_upload, sweep_staged
from tests.jobs.toy import TOY

pytestmark = pytest.mark.django_db


@pytest.fixture
def ledger():
    return jobs.create_job(TOY, params={"units": 0, "ledger": 0})


def toy(ledger, **params):
    return jobs.create_job(TOY, params={"ledger": ledger.pk, "units": 5, **params})


def _effects(ledger) -> list[str]:
    return sorted(k.split(" | ")[0] for k in JobEntry.objects.filter(job=ledger).values_list("key", flat=True))


def _interrupt(job) -> None:
    """What a killed worker leaves: running, its heartbeat long silent."""
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.RUNNING, run_token="dead", heartbeat_at=timezone.now() - timedelta(hours=1)
    )


def test_a_job_runs_and_summarises_its_units(ledger):
    job = jobs.run_now(toy(ledger))
    assert job.status == Job.Status.SUCCEEDED and job.runs == 1 and job.done == job.total == 5
    assert job.result == {"ok": 5, "skipped": 0, "errors": 0} and job.percent == 100 and job.heartbeat_at
    assert _effects(ledger) == [f"unit {n:03d}" for n in range(5)]


def test_failed_units_are_retried_on_resume_and_the_summary_counts_every_run(ledger, researcher):
    job = jobs.run_now(toy(ledger, fail_at=[1, 3], crash_first_run=True))
    assert job.status == Job.Status.FAILED and "crashed" in job.message
    assert list(job.entries.values_list("outcome", flat=True)) == ["ok", "error", "ok", "error", "ok"]
    job = jobs.run_now(jobs.requeue(job))
    assert job.status == Job.Status.SUCCEEDED and job.runs == 2
    assert job.result == {"ok": 5, "skipped": 0, "errors": 0} and job.done == 5  # each unit counted once
    assert _effects(ledger).count("unit 000") == 1 and _effects(ledger).count("unit 001") == 2  # only the failed one again


def test_a_runner_error_fails_the_job_with_its_message_and_resume_continues(ledger, monkeypatch):
    calls = {"n": 0}
    real = runner.JobRun.record_many

    def flaky(self, rows):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError("the disk went away")
        return real(self, rows)

    monkeypatch.setattr(runner.JobRun, "record_many", flaky)
    job = jobs.run_now(toy(ledger))
    assert job.status == Job.Status.FAILED and job.message == "OSError: the disk went away" and job.finished_at
    assert job.done == 2 and _effects(ledger) == ["unit 000", "unit 001"]  # the unit that failed left nothing
    job = jobs.run_now(jobs.requeue(job))
    assert job.status == Job.Status.SUCCEEDED and _effects(ledger) == [f"unit {n:03d}" for n in range(5)]


def test_delivering_a_finished_job_again_changes_nothing(ledger):
    job = jobs.run_now(toy(ledger))
    before = (job.status, job.finished_at, job.result, job.runs, job.done)
    assert runner.execute(job.pk) is None  # not claimable
    job.refresh_from_db()
    assert (job.status, job.finished_at, job.result, job.runs, job.done) == before
    assert JobEntry.objects.filter(job=job).count() == 5 and len(_effects(ledger)) == 5


def test_a_running_job_is_not_claimed_twice_until_its_heartbeat_stops(ledger):
    job = toy(ledger)
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, run_token="alive", heartbeat_at=timezone.now())
    assert runner.execute(job.pk) is None
    job.refresh_from_db()
    assert not job.is_interrupted and job.state == "running" and not job.can_resume
    with pytest.raises(Exception, match="still running"):
        jobs.requeue(job)
    _interrupt(job)
    job.refresh_from_db()
    assert job.is_interrupted and job.state == "interrupted" and job.can_resume
    # A late redelivery of its message takes over a job whose worker died.
    assert runner.execute(job.pk).status == Job.Status.SUCCEEDED


def test_a_superseded_run_stops_at_its_next_unit(ledger, monkeypatch, settings):
    settings.BENCHFORGE_JOB_HEARTBEAT_SECONDS = 0  # check on every unit
    job = toy(ledger, units=6)
    real = runner.JobRun.record_many

    def take_over(self, rows):
        real(self, rows)
        if JobEntry.objects.filter(job_id=self.job.pk).count() == 2:
            Job.objects.filter(pk=self.job.pk).update(run_token="someone-else")  # resumed elsewhere meanwhile

    monkeypatch.setattr(runner.JobRun, "record_many", take_over)
    ended = runner.execute(job.pk)
    assert ended.status == Job.Status.RUNNING and ended.run_token == "someone-else"
    assert JobEntry.objects.filter(job=job).count() == 2  # it stopped instead of racing the new run


def test_cancelling_stops_a_running_job_and_keeps_what_it_did(ledger, settings):
    settings.BENCHFORGE_JOB_HEARTBEAT_SECONDS = 0  # a cancel is seen at the next unit (else within the heartbeat interval)
    job = jobs.run_now(toy(ledger, units=8, cancel_after=2))
    assert job.status == Job.Status.CANCELLED and job.done == 3
    assert runner.execute(job.pk) is None  # a cancelled job is not picked up again


def test_resume_and_cancel_from_the_api_need_a_researcher(
    ledger, api_for, annotator, researcher, benchmark, django_capture_on_commit_callbacks
):
    job = toy(ledger)
    Job.objects.filter(pk=job.pk).update(benchmark_id=benchmark.pk)
    assert api_for(annotator).post(f"/api/v1/jobs/{job.pk}/cancel/").status_code == 403
    response = api_for(researcher).post(f"/api/v1/jobs/{job.pk}/cancel/")
    assert response.status_code == 200 and response.json()["status"] == "cancelled" and response.json()["can_resume"]
    again = api_for(researcher).post(f"/api/v1/jobs/{job.pk}/cancel/")
    assert again.status_code == 409 and "already cancelled: nothing is left to cancel" in again.json()["detail"]

    with django_capture_on_commit_callbacks(execute=True):
        response = api_for(researcher).post(f"/api/v1/jobs/{job.pk}/resume/")
    assert response.status_code == 200 and response.json()["status"] == "queued"  # then it ran (inline runner)
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.result == {"ok": 5, "skipped": 0, "errors": 0}
    done = api_for(researcher).post(f"/api/v1/jobs/{job.pk}/resume/")  # a state conflict: 409 saying what can be resumed
    assert done.status_code == 409 and done.json()["code"] == "not_resumable"
    assert "only a failed, cancelled or interrupted job can be resumed" in done.json()["detail"]
    listed = api_for(annotator).get("/api/v1/jobs/", {"benchmark": benchmark.slug}).json()
    assert [row["id"] for row in listed["results"]] == [job.pk] and listed["results"][0]["label"] == "toy job"


def test_the_api_shows_interrupted_jobs(ledger, api_for, researcher):
    job = toy(ledger)
    _interrupt(job)
    row = api_for(researcher).get(f"/api/v1/jobs/{job.pk}/").json()
    assert (row["status"], row["state"], row["can_resume"], row["can_cancel"]) == ("running", "interrupted", True, True)
    assert [r["id"] for r in api_for(researcher).get("/api/v1/jobs/", {"state": "interrupted"}).json()["results"]] == [job.pk]


def test_the_job_page_resumes_and_cancels(
    ledger, client_for, researcher, annotator, benchmark, django_capture_on_commit_callbacks
):
    job = toy(ledger)
    Job.objects.filter(pk=job.pk).update(benchmark_id=benchmark.pk)
    _interrupt(job)
    page = client_for(researcher).get(f"/jobs/{job.pk}/").content.decode()
    assert "Interrupted" in page and 'value="resume"' in page and "Its worker stopped answering" in page
    assert 'value="resume"' not in client_for(annotator).get(f"/jobs/{job.pk}/").content.decode()
    assert client_for(annotator).post(f"/jobs/{job.pk}/", {"action": "resume"}).status_code == 403
    with django_capture_on_commit_callbacks(execute=True):
        client_for(researcher).post(f"/jobs/{job.pk}/", {"action": "resume"})
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED
    listing = client_for(researcher).get("/jobs/", {"state": "succeeded"}).content.decode()
    assert f'data-job="{job.pk}"' in listing


def test_unknown_kinds_are_refused_when_created():
    with pytest.raises(LookupError, match="no job kind 'nope'"):
        jobs.create_job("nope")
    assert "toy" in registry.names()


def test_staged_uploads_go_when_the_job_succeeds_and_stay_while_it_can_resume(ledger, settings):
    media = Path(settings.MEDIA_ROOT)
    kept = stage_upload(ContentFile(b"zip bytes"), ".zip")
    job = jobs.create_job(TOY, params={"units": 2, "ledger": ledger.pk, "staged": kept, "crash_first_run": True})
    job = jobs.run_now(job)
    assert job.status == Job.Status.FAILED and (media / kept).exists()  # resumable: the upload is kept
    assert sweep_staged() == []
    job = jobs.run_now(jobs.requeue(job))
    assert job.status == Job.Status.SUCCEEDED and not (media / kept).exists()


def test_the_sweep_removes_abandoned_uploads_only(ledger, settings):
    media, now = Path(settings.MEDIA_ROOT), timezone.now()
    names = {
        state: stage_upload(ContentFile(state.encode()), ".zip")
        for state in ("fresh-failure", "old-failure", "old-interrupt", "old-cancel", "queued", "orphan-new", "orphan-old")
    }
    ago = now - timedelta(days=settings.BENCHFORGE_STAGED_UPLOAD_DAYS + 1)
    for state, (status, finished, beat) in {
        "fresh-failure": (Job.Status.FAILED, now, None),
        "old-failure": (Job.Status.FAILED, ago, None),
        "old-interrupt": (Job.Status.RUNNING, None, ago),
        "old-cancel": (Job.Status.CANCELLED, ago, None),
        "queued": (Job.Status.QUEUED, None, None),
    }.items():
        job = jobs.create_job(TOY, params={"units": 1, "ledger": ledger.pk, "staged": names[state]})
        Job.objects.filter(pk=job.pk).update(status=status, finished_at=finished, heartbeat_at=beat)
    import os

    old = time.time() - 7200
    os.utime(media / names["orphan-old"], (old, old))  # an upload whose request died two hours ago
    deleted = set(sweep_staged())
    assert deleted == {names["old-failure"], names["old-interrupt"], names["old-cancel"], names["orphan-old"]}
    assert all((media / names[s]).exists() for s in ("fresh-failure", "queued", "orphan-new"))


@pytest.mark.django_db(transaction=True)
def test_the_embedded_runtime_runs_jobs_in_a_thread_so_requests_do_not_wait(settings, monkeypatch):
    settings.BENCHFORGE_JOB_RUNNER = "thread"
    # The test database is SQLite in memory, whose connections lock whole tables without waiting:
    # nothing here reads or beats while the job thread writes (a file database in WAL mode waits).
    finished = threading.Event()
    real = runner.execute

    def execute(job_id):
        try:
            return real(job_id)
        finally:
            finished.set()

    monkeypatch.setattr(runner, "execute", execute)
    ledger = jobs.create_job(TOY, params={"units": 0, "ledger": 0})
    started = time.monotonic()
    job = jobs.start_job(TOY, params={"units": 20, "delay": 0.05, "ledger": ledger.pk})
    assert time.monotonic() - started < 0.5  # 1 s of work, and the caller did not wait for it
    assert finished.wait(timeout=30)
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.done == 20 and job.runs == 1


def _run_with_verbs(run):
    """Answers under "call:" (and one unit under another prefix), then fails with a result on its first run."""
    seen = run.done_rows("call:")
    run.record_many([(f"call:{n}", "ok", "", {"n": n}) for n in range(3) if str(n) not in seen])
    run.record("other:9", "ok", data={"n": 9})
    if run.job.runs == 1:
        run.fail("2 calls failed: resume to ask them again.", result={"seen": sorted(seen), "cost": "$0.01"})
    return {"seen": sorted(seen)}


def test_a_job_fails_with_a_result_and_a_resume_reads_the_rows_done_under_a_prefix():
    registry.register("toy-verbs", _run_with_verbs, label="toy job with verbs")
    job = jobs.run_now(jobs.create_job("toy-verbs"))
    assert job.status == Job.Status.FAILED and job.message == "2 calls failed: resume to ask them again."
    assert job.result == {"seen": [], "cost": "$0.01"}  # the failed job shows its result (its usage, say)
    job = jobs.run_now(jobs.requeue(job))
    assert job.status == Job.Status.SUCCEEDED and job.result == {"seen": ["0", "1", "2"]}  # "other:9" is not under "call:"


@pytest.mark.django_db(transaction=True)
def test_wait_returns_jobs_as_they_ended_or_as_they_are_at_the_timeout(settings):
    settings.BENCHFORGE_JOB_RUNNER = "thread"
    ledger = jobs.create_job(TOY, params={"units": 0, "ledger": 0})
    slow = jobs.start_job(TOY, params={"units": 40, "delay": 0.05, "ledger": ledger.pk})
    [early] = jobs.wait([slow], timeout=0.1)  # two seconds of work: not done yet
    assert not early.is_finished
    quick = jobs.start_job(TOY, params={"units": 3, "ledger": ledger.pk})

    ended = jobs.wait([slow.pk, quick], timeout=60)

    assert [job.pk for job in ended] == [slow.pk, quick.pk]  # in the order asked
    assert all(job.status == Job.Status.SUCCEEDED for job in ended) and [job.done for job in ended] == [40, 3]


def _report_a_word(run):
    return {"said": gettext("Interrupted")}


def test_a_job_writes_its_report_in_the_language_of_the_page_it_was_started_from():
    """Started from a Chinese page, the job's report is Chinese wherever it runs later (here under
    English, as on a worker); started from an English page or a command, English."""
    registry.register("toy-language", _report_a_word, label="toy job that reports a word")
    with translation.override("zh-hans"):
        chinese = jobs.create_job("toy-language")
        expected = gettext("Interrupted")
    english = jobs.create_job("toy-language")
    assert expected != "Interrupted" and (chinese.language, english.language) == ("zh-hans", "en")

    assert jobs.run_now(chinese).result == {"said": expected}
    assert jobs.run_now(english).result == {"said": "Interrupted"}
