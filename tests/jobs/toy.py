"""A toy job kind for the job runner's tests: `units` units, each taking `delay` seconds, each
leaving a side effect (a row in a ledger job) in the same transaction as its entry."""

import time
import uuid

from jobs import registry

TOY = "toy"


def run_toy(run):
    from jobs.models import JobEntry

    units, delay, ledger = run.params["units"], run.params.get("delay", 0), run.params["ledger"]
    run.set_total(units)
    done = run.done_keys()
    for n in range(units):
        key = f"unit {n:03d}"
        if key in done:
            continue
        time.sleep(delay)
        with run.unit(key) as unit:
            JobEntry.objects.create(job_id=ledger, key=f"{key} | run {run.job.runs} | {uuid.uuid4().hex}", outcome="ok")
            if n in run.params.get("fail_at", []) and run.job.runs == 1:
                unit.error(f"{key} failed on the first run")
            else:
                unit.ok(f"done on run {run.job.runs}")
        if n == run.params.get("cancel_after"):
            from jobs.models import Job

            Job.objects.filter(pk=run.job.pk).update(status=Job.Status.CANCELLED)  # as if a researcher pressed Cancel
    if run.params.get("crash_first_run") and run.job.runs == 1:
        raise RuntimeError("the first run crashed after its units")
    return None


def register_toy() -> None:
    registry.register(TOY, run_toy, label="toy job")


register_toy()
