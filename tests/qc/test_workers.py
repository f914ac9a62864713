"""A QC run on a real Celery worker (Redis broker and limiter, Postgres) SIGKILLed midway: the
job resumes and no call whose answer had been recorded is asked again; the flags are the same as
an uninterrupted run's."""

import threading
import time
import uuid

import pytest

from jobs.models import Job
from qc import services
from qc.models import QCItem
from qc.selectors import run_usage
from tests.jobs.workers import kill_with_every_counted_request_sent, wait_for
from tests.llm.conftest import KEY_ENV
from tests.qc.conftest import knower, make_mcq_items

try:  # the fixture lives here until it moves to tests/conftest.py
    from tests.jobs.workers import celery_workers  # noqa: F401
except ImportError:
    pass

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


class Recorder:
    """Wraps a reply script, noting when each (model, prompt) reached the server."""

    def __init__(self, model, script):
        self.model, self.script = model, script
        self.lock = threading.Lock()
        self.times: dict[tuple, list[float]] = {}

    def __call__(self, body):
        with self.lock:
            self.times.setdefault((self.model, str(body["messages"])), []).append(time.monotonic())
        return self.script(body)


def test_a_killed_worker_resumes_the_run_without_repeating_a_recorded_call(
    celery_workers, declare, fake_llm, benchmark, researcher, settings, api_for
):
    settings.BENCHFORGE_JOB_HEARTBEAT_TIMEOUT = 3
    prefix = f"bf-test-{uuid.uuid4().hex[:8]}"
    models = declare({"k1": {"max_concurrency": 4}, "k2": {"max_concurrency": 4}, "k3": {"max_concurrency": 4}})
    celery_workers.env.update(
        {
            "BENCHFORGE_MODELS": str(models),
            KEY_ENV: "id.secret",
            "BENCHFORGE_LLM_REDIS_PREFIX": prefix,
            "BENCHFORGE_LLM_SLOT_LEASE_SECONDS": "3",
            "LOG_LEVEL": "WARNING",
        }
    )
    known = {"k1": set(range(0, 30, 2)), "k2": set(range(0, 30, 3)), "k3": set(range(0, 30, 5))}
    recorders = {name: Recorder(name, knower(k)) for name, k in known.items()}
    for name, recorder in recorders.items():
        fake_llm.script(name, recorder)
    fake_llm.set_latency(0.05)
    make_mcq_items(benchmark, researcher, 30)
    first = celery_workers.start()

    run = services.start_run(benchmark, user=researcher, filter="text_only", models=["k1", "k2", "k3"])
    [job] = run.jobs.all()
    wait_for(lambda: job.entries.filter(outcome="ok").count() >= 40, timeout=120, what="40 recorded calls")
    kill_with_every_counted_request_sent(celery_workers, first, fake_llm=fake_llm, job=job, latency=0.05)
    killed_at = time.monotonic()  # the worker is dead now: nothing it sent can come after this
    recorded = set(job.entries.filter(outcome="ok").values_list("key", flat=True))

    api = api_for(researcher)
    wait_for(lambda: api.get(f"/api/v1/jobs/{job.pk}/").json()["state"] == "interrupted", timeout=30, what="interrupted")
    assert api.post(f"/api/v1/jobs/{job.pk}/resume/").status_code == 200
    celery_workers.start()
    wait_for(lambda: Job.objects.get(pk=job.pk).is_finished, timeout=180, what="the resumed job")
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.runs == 2, job.message

    repeated = {key: times for r in recorders.values() for key, times in r.times.items() if len(times) > 1}
    # The only calls asked twice were in flight when the worker died (their replies died with it);
    # the 40+ recorded before the kill, and those answered but not yet recorded (in the shared
    # cache), were not asked again. Models are asked one at a time: at most one bound in flight.
    assert len(recorded) >= 40
    assert len(repeated) <= 4 and all(
        times[0] <= killed_at for times in repeated.values()
    )  # asked before the kill (no lower bound: under load a reply can take seconds)
    expected = {n for n in range(30) if sum(n in k for k in known.values()) >= 2}
    flagged = {int(e.item.external_id[1:]) for e in QCItem.objects.filter(run=run, flagged=True).select_related("item")}
    assert flagged == expected

    # The run's usage counts every request each endpoint received, though the killed job run never
    # recorded its usage (counted just before sending, and killed with none between its count and its send).
    usage = run_usage(run)["endpoints"]
    for name in known:
        received = len(fake_llm.requests(name))
        assert usage[name]["requests"] == received, (name, received, usage[name])


def test_a_killed_worker_s_run_finishes_by_itself_on_the_next_worker(
    celery_workers, declare, fake_llm, benchmark, researcher, settings
):
    """No one presses Resume: the new worker's sweeper re-queues the job its dead worker held."""
    settings.BENCHFORGE_JOB_HEARTBEAT_TIMEOUT = 3
    prefix = f"bf-test-{uuid.uuid4().hex[:8]}"
    models = declare({"k1": {"max_concurrency": 4}, "k2": {"max_concurrency": 4}})
    celery_workers.env.update(
        {
            "BENCHFORGE_MODELS": str(models),
            KEY_ENV: "id.secret",
            "BENCHFORGE_LLM_REDIS_PREFIX": prefix,
            "BENCHFORGE_LLM_SLOT_LEASE_SECONDS": "3",
            "BENCHFORGE_JOB_HEARTBEAT_TIMEOUT": "3",
            "BENCHFORGE_JOB_RECOVERY_BACKOFF": "0.5",
        }
    )
    known = {"k1": set(range(0, 30, 2)), "k2": set(range(0, 30, 3))}
    for name, k in known.items():
        fake_llm.script(name, knower(k))
    fake_llm.set_latency(0.05)
    make_mcq_items(benchmark, researcher, 30)
    first = celery_workers.start()
    run = services.start_run(benchmark, user=researcher, filter="text_only", models=["k1", "k2"])
    [job] = run.jobs.all()
    wait_for(lambda: job.entries.filter(outcome="ok").count() >= 30, timeout=120, what="30 recorded calls")
    kill_with_every_counted_request_sent(celery_workers, first, fake_llm=fake_llm, job=job, latency=0.05)
    celery_workers.start()  # a worker comes back (a restart); nobody touches the job

    wait_for(lambda: Job.objects.get(pk=job.pk).is_finished, timeout=180, what="the job to finish by itself")
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.runs == 2 and job.recoveries == 1, job.message
    assert [r["recovered"] for r in job.run_log] == [False, True]
    assert job.run_log[0]["worker"].startswith("test0-") and job.run_log[1]["worker"].startswith("test1-")
    expected = {n for n in range(30) if sum(n in k for k in known.values()) >= 2}
    flagged = {int(e.item.external_id[1:]) for e in QCItem.objects.filter(run=run, flagged=True).select_related("item")}
    assert flagged == expected
    run.refresh_from_db()
    assert run.status == "finished"
    usage = run_usage(run)["endpoints"]
    for name in known:
        received = len(fake_llm.requests(name))
        assert usage[name]["requests"] == received, (name, received, usage[name])
    log = (celery_workers.tmp_path / "worker-1.log").read_text()  # the worker's log names the job it runs
    assert f"job {job.pk} (qc_run) run 2 started on test1-" in log and f"job {job.pk} (qc_run) run 2 ended: succeeded" in log
