"""A job kind of another app, as rewrite and QC runners will be: it runs its calls through
llm.services.run_calls inside its own job, and writes what each reply means (here a JobEntry in
a ledger job) in the transaction that records the call."""

from django.db import transaction

from benchforge.errors import DomainError
from jobs import registry
from jobs.models import Job, JobEntry
from llm.services import Call, run_calls

PROBE = "llm_probe"


class Crash(RuntimeError):
    """The worker dies while recording (as if killed): the run stops, nothing of that group commits."""


def run_probe(run):
    params = run.params
    ledger, crash_after = params["ledger"], params.get("crash_after")
    seen = {"n": 0}

    def on_result(result):
        seen["n"] += 1
        if crash_after is not None and run.job.runs == 1 and seen["n"] > crash_after:
            raise Crash("the first run dies here")
        if result.ok and result.text == "refuse":
            raise DomainError("the reply says refuse: not a usable rewrite")
        if params.get("cancel_after") == seen["n"] and run.job.runs == 1:
            # As if a researcher pressed Cancel (in a transaction of their own) once this call is recorded.
            transaction.on_commit(lambda: Job.objects.filter(pk=run.job.pk).update(status=Job.Status.CANCELLED))
        if result.ok:
            JobEntry.objects.create(
                job_id=ledger, key=f"{result.call.key} | run {run.job.runs}", outcome="ok", message=result.text
            )
        return {"seen_in_run": run.job.runs}

    calls = [Call(f"probe-{n:03d}", [{"role": "user", "content": f"{params['prefix']} {n}"}]) for n in range(params["n"])]
    summary = run_calls(run, calls, endpoint=params["endpoint"], on_result=on_result, total=len(calls))
    return {key: value for key, value in summary.items() if key != "first_errors"}


registry.register(PROBE, run_probe, label="LLM probe")
