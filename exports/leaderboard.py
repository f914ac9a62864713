"""A release's leaderboard: a model's answers (uploaded, or asked of an endpoint) scored with the
harness's scoring library, as a job, against the release's full rows (answer keys, references
and criteria included: scoring happens on the platform, which may see them).

Scores exist only for frozen releases, so a score always names content that can never change;
the score card records the release version, the private bundle's sha256, the harness version
and the judge endpoint's settings."""

import io
import json
import math
from pathlib import Path

from django.core.files.storage import default_storage
from django.db import transaction
from django.utils.text import slugify
from django.utils.translation import gettext

import harness
from benchforge import permissions
from benchforge.errors import DomainError
from harness import DEFAULT_LANGUAGE, PREDICTIONS_FORMAT, InputError, in_language, parse_item, read_predictions, scoring
from harness import Release as HarnessRelease
from harness.llm import DEFAULT_COMPLETION_TOKENS, IMAGE_TOKENS, cost, estimate_prompt_tokens, text_message
from jobs import services as jobs
from llm.client import check_endpoints, get_client, get_endpoint
from llm.selectors import usage_of
from llm.sink import JobSink

from .models import Release, ReleaseFile, Score
from .services import bundle_rows

SCORE_JOB = "release_score"
MAX_ERRORS_SHOWN = 10


# ---- predictions files ----------------------------------------------------------------------------


def scoring_release(release: Release) -> HarnessRelease:
    """The release as its bundled harness loads it from the private bundle: the same items (parsed
    by the harness), the same taxonomy.json (so the same judge rules) and name."""
    rows = bundle_rows(release, "private")
    language = release.language or DEFAULT_LANGUAGE
    return HarnessRelease(
        root=Path(release.top),
        items=in_language([parse_item(row, f"items.jsonl:{n}") for n, row in enumerate(rows, 1)], language),
        taxonomy=release.taxonomy,
        manifest={"name": release.benchmark.slug, "version": release.version, "language": language},
    )


def parse_predictions(data: bytes, release: HarnessRelease, *, label: str) -> dict[str, str]:
    """An uploaded predictions file, read by the harness's own reader (harness.release.PREDICTIONS_FORMAT:
    what `infer` writes and `judge` reads), open questions only; {item id: answer}. Every problem
    is reported with its line; nothing is kept from a file that has any."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DomainError(gettext("The predictions file is not UTF-8 text (byte %(byte)s).") % {"byte": exc.start}) from None
    try:
        read = read_predictions(io.StringIO(text), release, source="", model=label, open_questions_only=True)
    except InputError as exc:
        raise DomainError(
            gettext("The predictions file was not used: %(problem)s. Expected %(format)s.")
            % {"problem": exc, "format": PREDICTIONS_FORMAT}
        ) from None
    if not read.answers:
        raise DomainError(gettext("The predictions file holds no answers."))
    return read.answers


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
        raise DomainError(
            gettext("Release %(version)s is not frozen: freeze it first, so its scores name fixed content.")
            % {"version": release.version}
        )
    label = (label or "").strip()
    if not label:
        raise DomainError(gettext("Name the model: its label is how the leaderboard shows it."))
    if method not in Score.Method.values:
        raise DomainError(
            gettext("Unknown scoring method '%(method)s'; choose among %(methods)s.")
            % {"method": method, "methods": ", ".join(Score.Method.values)}
        )
    mode = scoring.MODES[method]
    if (predictions is None) == (not endpoint):
        raise DomainError(gettext("Either upload a predictions file or name an endpoint to ask, not both."))
    if not mode.takes("answers") and predictions is not None:
        raise DomainError(
            gettext(
                "Multiple-choice items are scored under CircularEval, which asks the model each question with its "
                "options rotated: name the model's endpoint instead of uploading answers."
            )
        )
    if mode.takes("judge") and not judge:
        raise DomainError(gettext("Name the judge endpoint for pointwise or pairwise scoring."))
    if mode.takes("anchor"):
        if anchor is None or anchor.release_id != release.pk or not anchor.answers:
            raise DomainError(
                gettext("Pairwise scoring needs an anchor: a model already on this release's leaderboard with answers.")
            )
    scored = scoring_release(release)
    rows = scored.items
    open_ids = [item.id for item in rows if not item.is_mcq]
    if not mode.takes("answers") and not any(item.is_mcq and item.answer for item in rows):
        raise DomainError(
            gettext("Release %(version)s has no multiple-choice item with an answer key.") % {"version": release.version}
        )
    if mode.takes("answers") and not open_ids:
        raise DomainError(gettext("Release %(version)s has no open question to judge.") % {"version": release.version})
    answers = parse_predictions(predictions, scored, label=label) if predictions is not None else {}
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
        answered = len(open_ids) if endpoint and mode.takes("answers") else 0
        calls = answered + mode.judge_calls * sum(map(mode.scores, rows))
        job = jobs.create_job(
            SCORE_JOB,
            user=user,
            benchmark=release.benchmark,
            total=calls or len(rows),
            params={"score": score.pk, "estimate": estimate(rows, mode, endpoint=endpoint, judge=judge, answers=answers)},
        )
        Score.objects.filter(pk=score.pk).update(job=job)
        jobs.enqueue(job)
    score.refresh_from_db()
    return score


MCQ_COMPLETION_TOKENS = 8
JUDGE_PROMPT_OVERHEAD = 400  # the judge's instructions and criteria around the question and answers


def estimate(rows, mode: scoring.Mode, *, endpoint: str, judge: str, answers: dict) -> dict:
    """What scoring with `mode` would spend if every call were paid (the harness's rough token
    rule): {"calls", "prompt_tokens", "completion_tokens", "cost" (None: an endpoint has no
    prices), "per_endpoint"}. The mode says which items it scores and what each takes: its own
    calls to the endpoint (CircularEval: every pass, though a failed pass skips the rest), an
    answer from the endpoint when it judges answers not yet given, and its judge calls."""
    per: dict[str, dict] = {}

    def add(name: str, text: str, completion: int, *, images: int = 0, extra: int = 0, times: int = 1) -> None:
        row = per.setdefault(name, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
        row["calls"] += times
        row["prompt_tokens"] += times * (estimate_prompt_tokens([text_message("user", text)]) + IMAGE_TOKENS * images + extra)
        row["completion_tokens"] += times * completion

    for item in rows:
        images = len(item.images)
        # The endpoint answers every open question first (answer_questions), when the mode judges answers.
        asked = bool(endpoint) and mode.takes("answers") and not item.is_mcq and item.id not in answers
        if asked:
            add(endpoint, item.question, DEFAULT_COMPLETION_TOKENS, images=images)
        if not mode.scores(item):
            continue
        if mode.passes is not None:
            options = "\n".join(f"{k}. {v}" for k, v in (item.choices or {}).items())
            add(
                endpoint,
                f"{item.hint or ''}\n{item.question}\n{options}",
                MCQ_COMPLETION_TOKENS,
                images=images,
                times=mode.passes(item),
            )
        if mode.judge_calls:
            text = f"{item.question}\n{item.reference_answer or ''}\n{answers.get(item.id, '')}"
            # An answer still to be asked is as long as a typical reply.
            extra = JUDGE_PROMPT_OVERHEAD + (DEFAULT_COMPLETION_TOKENS if asked else 0)
            add(judge, text, DEFAULT_COMPLETION_TOKENS, images=images, extra=extra, times=mode.judge_calls)
    total_cost: float | None = 0.0
    for name, row in per.items():
        price = cost(get_endpoint(name), row)
        row["cost"] = round(price, 6) if price is not None else None
        total_cost = None if price is None or total_cost is None else total_cost + price
    return {
        **{key: sum(row[key] for row in per.values()) for key in ("calls", "prompt_tokens", "completion_tokens")},
        "cost": round(total_cost, 6) if total_cost is not None else None,
        "per_endpoint": per,
    }


def spending(score: Score) -> dict:
    """The score's estimate (made before it ran) and what its job spent, from the usage ledger."""
    if score.job_id is None:
        return {"estimate": None, "usage": None}
    return {"estimate": score.job.params.get("estimate"), "usage": usage_of([score.job_id])}


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


def run_score(run) -> dict:
    score = Score.objects.select_related("release__benchmark", "anchor").get(pk=run.params["score"])
    release = score.release
    scored_release = scoring_release(release)
    # Exactly what the bundled harness reads: its parsed items, and the judge rules of taxonomy.json.
    rows, rules = scored_release.items, scored_release.judge_rules()
    images = dict(release.images.values_list("name", "storage_name"))

    def load_image(name: str) -> bytes:
        with default_storage.open(images[name], "rb") as handle:
            return handle.read()

    mode = scoring.MODES[score.method]
    # The client bills every call to this job run in the usage ledger (the score page reads it);
    # the sink keeps each answered call as a unit of the job, under its step's prefix.
    client = get_client(payer=(run.job.pk, run.job.runs))
    sink = JobSink(run)
    try:
        answers = score.answers
        if mode.takes("answers") and score.source == Score.Source.INFER and not answers:
            run.say(gettext("Asking %(endpoint)s the open questions…") % {"endpoint": score.endpoint})
            answers, _stats = scoring.answer_questions(
                client, score.endpoint, rows, sink=sink.scoped("answer:"), image_loader=load_image
            )
            Score.objects.filter(pk=score.pk).update(answers=answers)
        if mode.takes("judge"):
            run.say(gettext("Judging with %(judge)s…") % {"judge": score.judge})
        settings = {
            "models": [score.endpoint],
            "judge": score.judge,
            # an MCQ score's judge endpoint is its choice extractor: it reads the replies the rules cannot
            "extractor": score.judge or None,
            "answers": {score.label: answers},
            "anchor": score.anchor.label if score.anchor else None,
            "anchor_answers": score.anchor.answers if score.anchor else None,
            "rules": rules,
            "image_loader": load_image,
        }
        step = "judge" if mode.takes("judge") else mode.name
        scored = mode.run(client, rows, sink=sink.scoped(f"{step}:"), **mode.accepts(settings))
        (results,) = scored.results["models"].values()
        if "elo" in scored.results:
            results["elo"] = scored.results["elo"]
    except Exception:
        Score.objects.filter(pk=score.pk).update(status=Score.Status.FAILED)
        raise
    finally:
        sink.close()  # what is still buffered is recorded, also when scoring stopped on an error
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

# Whether people validated a score's judge: the human-evaluation stage reads exports, never the other
# way round, so it registers the function that answers (humaneval.apps).
_validation_finder = None


def register_validation_finder(find) -> None:
    """`find(release)` returns {score pk: {"number", "ratings", "headline", "url", ...}}."""
    global _validation_finder
    _validation_finder = find


def validations(release) -> dict[int, dict]:
    """{score pk: how its judge was validated by people on this release}; empty without that stage."""
    return _validation_finder(release) if _validation_finder is not None else {}


_citation_finder = None


def register_card_citations(find) -> None:
    """`find(release)` returns the finished human-evaluation studies cited on the release's card
    page: [{"number", "title", "mode", "ratings", "raters", "headline", "url", ...}]."""
    global _citation_finder
    _citation_finder = find


def card_citations(release) -> list[dict]:
    return _citation_finder(release) if _citation_finder is not None else []


def predictions_file_name(score: Score) -> str:
    return f"{slugify(score.label) or 'model'}-{score.pk}.jsonl"


def predictions_jsonl(score: Score) -> str:
    """The score's answers in the one predictions format (harness.release.PREDICTIONS_FORMAT), in release order."""
    order = score.release.items.order_by("order").values_list("key", flat=True)
    return "".join(
        json.dumps({"id": key, "model": score.label, "answer": score.answers[key]}, ensure_ascii=False) + "\n"
        for key in order
        if key in score.answers
    )


def reproduce_commands(score: Score) -> list[str]:
    """The shell commands that score the same answers again with the private bundle's own harness
    (run from the folder the bundle was downloaded to; models.toml declares the judge as the card
    shows it). Empty when the method takes answers the card cannot hand out (asked of an endpoint)."""
    release = score.release
    bundle = f"{release.top}-private.tar.gz"
    sha = score.scored_with.get("bundle_sha256", "")
    steps = [
        f"echo '{sha}  {bundle}' | sha256sum -c -",
        f"tar xzf {bundle}",
        f"python -m harness verify {release.top}",
    ]
    line = scoring.MODES[score.method].command_line(
        {
            "release": release.top,
            "models": "models.toml",
            "judge": score.judge,
            "model": score.endpoint,
            "extractor": score.judge,  # an MCQ score's judge endpoint is its choice extractor
            "predictions": predictions_file_name(score) if score.answers else None,
            "anchor": predictions_file_name(score.anchor) if score.anchor else None,
            "out": f"results/{slugify(score.label) or 'model'}",
        }
    )
    if line is not None:
        steps.append(line)
    return steps


def headline(method: str, results: dict) -> str:
    """The leaderboard's one number, as text (the scoring mode's headline)."""
    return scoring.MODES[method].headline_text(results)


def per_group(method: str, results: dict) -> list[tuple[str, float | None, int]]:
    """(task or category, value on a 0-1 scale, n) rows for the table and the chart."""
    return scoring.MODES[method].per_group(results)
