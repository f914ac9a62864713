"""A release's leaderboard: a model's answers (uploaded, or asked of an endpoint) scored with the
harness's scoring library, as a job, against the release's full rows (answer keys, references
and criteria included: scoring happens on the platform, which may see them).

Scores exist only for frozen releases, so a score always names content that can never change;
the score card records the release version, the private bundle's sha256, the harness version
and the judge endpoint's settings."""

import json
import math

from django.core.files.storage import default_storage
from django.db import transaction

import harness
from benchforge import permissions
from benchforge.errors import DomainError
from harness import scoring
from harness.scoring import FINAL
from jobs import services as jobs
from jobs.runner import OK
from llm.client import check_endpoints, get_client, get_endpoint

from .models import Release, ReleaseFile, Score
from .services import bundle_rows

SCORE_JOB = "release_score"
MAX_ERRORS_SHOWN = 10


# ---- predictions files ----------------------------------------------------------------------------


def parse_predictions(data: bytes, *, known_ids) -> dict[str, str]:
    """A predictions file: JSON Lines of {"id": ..., "answer": "..."} (ids as strings or integers;
    "prediction" or "response" are read as the answer too), or one JSON object {id: answer}.
    Every problem is reported with its line; nothing is kept from a file that has any."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DomainError(f"The predictions file is not UTF-8 text (byte {exc.start}).") from None
    known, answers, problems = set(known_ids), {}, []
    try:
        whole = json.loads(text) if text.lstrip().startswith("{") else None
    except (json.JSONDecodeError, RecursionError):
        whole = None  # not one JSON document: read it as JSON Lines
    if isinstance(whole, dict) and "id" not in whole:
        rows = [(1, {"id": key, "answer": value}) for key, value in whole.items()]
    else:
        rows = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except (json.JSONDecodeError, RecursionError) as exc:
                problems.append(f"line {number}: not valid JSON ({exc.msg})")
                continue
            if not isinstance(row, dict):
                problems.append(f'line {number}: expected an object with "id" and "answer"')
                continue
            rows.append((number, row))
    for number, row in rows:
        item_id = row.get("id")
        answer = next((row[k] for k in ("answer", "prediction", "response") if k in row), None)
        if isinstance(item_id, bool) or not isinstance(item_id, str | int):
            problems.append(f'line {number}: "id" must be the item\'s id (a string or an integer)')
        elif str(item_id) not in known:
            problems.append(f"line {number}: no item {item_id!r} in this release")
        elif str(item_id) in answers:
            problems.append(f"line {number}: a second answer for item {item_id!r}")
        elif not isinstance(answer, str):
            problems.append(f"line {number}: the answer of item {item_id!r} must be text")
        else:
            answers[str(item_id)] = answer
    if problems:
        shown = "; ".join(problems[:MAX_ERRORS_SHOWN])
        more = f" (and {len(problems) - MAX_ERRORS_SHOWN} more)" if len(problems) > MAX_ERRORS_SHOWN else ""
        raise DomainError(f"The predictions file was not used: {shown}{more}.")
    if not answers:
        raise DomainError("The predictions file holds no answers.")
    return answers


# ---- submitting ---------------------------------------------------------------------------------


def submit(
    release: Release,
    *,
    user,
    label: str,
    method: str,
    predictions: bytes | None = None,
    endpoint: str = "",
    judge: str = "",
    anchor: Score | None = None,
) -> Score:
    """Check everything a score needs before any call, then score it as a job."""
    permissions.require_researcher(user, "Scoring a model")
    if not release.is_frozen:
        raise DomainError(f"Release {release.version} is not frozen: freeze it first, so its scores name fixed content.")
    label = (label or "").strip()
    if not label:
        raise DomainError("Name the model: its label is how the leaderboard shows it.")
    if method not in Score.Method.values:
        raise DomainError(f"Unknown scoring method {method!r}; choose among {', '.join(Score.Method.values)}.")
    if (predictions is None) == (not endpoint):
        raise DomainError("Either upload a predictions file or name an endpoint to ask, not both.")
    if method == Score.Method.MCQ and predictions is not None:
        raise DomainError(
            "Multiple-choice items are scored under CircularEval, which asks the model each question with its "
            "options rotated: name the model's endpoint instead of uploading answers."
        )
    if method in (Score.Method.POINTWISE, Score.Method.PAIRWISE) and not judge:
        raise DomainError("Name the judge endpoint for pointwise or pairwise scoring.")
    if method == Score.Method.PAIRWISE:
        if anchor is None or anchor.release_id != release.pk or not anchor.answers:
            raise DomainError("Pairwise scoring needs an anchor: a model already on this release's leaderboard with answers.")
    rows = bundle_rows(release, "private")
    open_ids = [r["id"] for r in rows if not r["choices"]]
    if method == Score.Method.MCQ and not any(r["choices"] and r["answer"] for r in rows):
        raise DomainError(f"Release {release.version} has no multiple-choice item with an answer key.")
    if method != Score.Method.MCQ and not open_ids:
        raise DomainError(f"Release {release.version} has no open question to judge.")
    answers = parse_predictions(predictions, known_ids=open_ids) if predictions is not None else {}
    names = [n for n in (endpoint, judge) if n]
    client = get_client()
    try:
        check_endpoints(client, names)  # unknown endpoint or unset key: said now, not after a failed job
    finally:
        client.close()
    scored_with = {
        "release": release.version,
        "benchmark": release.benchmark.slug,
        "bundle_sha256": _private_bundle_sha256(release),
        "harness_version": harness.__version__,
        "endpoints": {name: _endpoint_settings(name) for name in names},
    }
    with transaction.atomic():
        score = Score.objects.create(
            release=release,
            label=label,
            method=method,
            source=Score.Source.UPLOAD if predictions is not None else Score.Source.INFER,
            endpoint=endpoint,
            judge=judge,
            anchor=anchor,
            answers=answers,
            scored_with=scored_with,
            created_by=user,
        )
        calls = len(open_ids) if endpoint and method != Score.Method.MCQ else 0
        calls += {Score.Method.POINTWISE: len(open_ids), Score.Method.PAIRWISE: 2 * len(open_ids)}.get(method, 0)
        job = jobs.create_job(
            SCORE_JOB, user=user, benchmark=release.benchmark, total=calls or len(rows), params={"score": score.pk}
        )
        Score.objects.filter(pk=score.pk).update(job=job)
        jobs.enqueue(job)
    score.refresh_from_db()
    return score


def _private_bundle_sha256(release: Release) -> str:
    found = release.files.filter(kind=ReleaseFile.Kind.PRIVATE_TAR).first()
    return found.sha256 if found else ""


def _endpoint_settings(name: str) -> dict:
    endpoint = get_endpoint(name)
    return {
        "provider": endpoint.provider,
        "model": endpoint.model,
        "base_url": endpoint.base_url,
        "vision": endpoint.vision,
        "params": dict(endpoint.params),  # temperature and the like: part of what a judge's score means
    }


# ---- scoring (the job) ----------------------------------------------------------------------------


class JobSink:
    """The harness's sink over the job's unit records: a resumed score finds the calls already
    answered and does not ask them again."""

    def __init__(self, run, step: str):
        self.run, self.prefix = run, f"{step}:"

    def done_rows(self) -> dict[str, dict]:
        entries = self.run.job.entries.filter(key__startswith=self.prefix, outcome=OK).values_list("key", "data")
        return {key[len(self.prefix) :]: data for key, data in entries}

    def write(self, row: dict) -> None:
        if row.get("status") in FINAL:
            self.run.record(self.prefix + row["key"], OK, data=row)

    def close(self) -> None:
        pass


def run_score(run) -> dict:
    score = Score.objects.select_related("release__benchmark", "anchor").get(pk=run.params["score"])
    release = score.release
    rows = bundle_rows(release, "private")
    images = dict(release.images.values_list("name", "storage_name"))

    def load_image(name: str) -> bytes:
        with default_storage.open(images[name], "rb") as handle:
            return handle.read()

    client = get_client(payer=(run.job.pk, run.job.runs))
    try:
        if score.method == Score.Method.MCQ:
            result = scoring.circular_eval(
                client, rows, [score.endpoint], sink=JobSink(run, "mcq"), image_loader=load_image, workers=1
            )
            summary = scoring.summarize_circular(result)
            summary.pop("item_rows", None)
            results = summary["models"][score.endpoint]
        else:
            answers = score.answers
            if score.source == Score.Source.INFER and not answers:
                run.say(f"Asking {score.endpoint} the open questions…")
                answers, _stats = scoring.answer_questions(
                    client, score.endpoint, rows, sink=JobSink(run, "answer"), image_loader=load_image
                )
                Score.objects.filter(pk=score.pk).update(answers=answers)
            run.say(f"Judging with {score.judge}…")
            if score.method == Score.Method.POINTWISE:
                scored = scoring.pointwise_judge(client, score.judge, rows, {score.label: answers}, sink=JobSink(run, "judge"))
            else:
                scored = scoring.pairwise_judge(
                    client,
                    score.judge,
                    rows,
                    score.anchor.label,
                    score.anchor.answers,
                    {score.label: answers},
                    sink=JobSink(run, "judge"),
                    image_loader=load_image,
                )
            results = scored.results["models"][score.label]
            if "elo" in scored.results:
                results["elo"] = scored.results["elo"]
    except Exception:
        Score.objects.filter(pk=score.pk).update(status=Score.Status.FAILED)
        raise
    finally:
        client.close()
    Score.objects.filter(pk=score.pk).update(status=Score.Status.DONE, results=_finite(results))
    return {"scored": headline(score.method, results)}


def _finite(value):
    """The results with NaN/inf (e.g. an alignment score with no spread) as null: JSON has no NaN."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


# ---- reading ------------------------------------------------------------------------------------


def headline(method: str, results: dict) -> str:
    """The leaderboard's one number, as text."""
    if not results:
        return "—"
    if method == Score.Method.MCQ:
        return _percent(results.get("circular"))
    if method == Score.Method.PAIRWISE:
        return f"win {_percent(results.get('win_rate'))}"
    mean = results.get("mean")
    return "—" if mean is None else f"{mean:.2f} / 10"


def per_group(method: str, results: dict) -> list[tuple[str, float | None, int]]:
    """(task or category, value on a 0-1 scale, n) rows for the table and the chart."""
    if method == Score.Method.MCQ:
        return [(name, g.get("circular"), g.get("n", 0)) for name, g in results.get("by_task", {}).items()]
    if method == Score.Method.PAIRWISE:
        return [(name, g.get("win_rate"), g.get("total", 0)) for name, g in results.get("by_category", {}).items()]
    return [(name, g["mean"] / 10, g["n"]) for name, g in results.get("by_task", {}).items()]


def _percent(value) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"
