"""A release's leaderboard: a model's answers (uploaded, or asked of an endpoint) scored with the
harness's scoring library, as a job, against the release's full rows (answer keys, references
and criteria included: scoring happens on the platform, which may see them).

Scores exist only for frozen releases, so a score always names content that can never change;
the score card records the release version, the private bundle's sha256, the harness version
and the judge endpoint's settings."""

import io
import json
import logging
import tarfile
from pathlib import Path

from django.core.files.storage import default_storage
from django.db import transaction
from django.utils.text import slugify
from django.utils.translation import gettext

import benchforge_harness
from benchforge import permissions
from benchforge.errors import Conflict, DomainError
from benchforge_harness import (
    DEFAULT_LANGUAGE,
    MANIFEST,
    PREDICTIONS_FORMAT,
    InputError,
    distribution,
    in_language,
    metrics,
    parse_item,
    read_predictions,
    scoring,
)
from benchforge_harness import Release as HarnessRelease
from benchforge_harness.llm import ConfigError, LLMError
from jobs import services as jobs
from jobs.selectors import recorded_rows
from llm.client import check_endpoints, get_client, get_endpoint
from llm.selectors import usage_of
from llm.sink import JobSink

from . import selectors
from .models import Release, ReleaseFile, Score
from .services import bundle_rows

SCORE_JOB = "release_score"
log = logging.getLogger(__name__)
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
    """An uploaded predictions file, read by the harness's own reader (benchforge_harness.release.PREDICTIONS_FORMAT:
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
    predictions=None,
    endpoint: str = "",
    judge: str = "",
    anchor: Score | None = None,
) -> Score:
    """Check everything a score needs before any call, then score it as a job. `predictions`: the
    uploaded file (bytes, or an upload to read), None when the endpoint is asked; the endpoint
    names are taken without surrounding spaces (as a form or the API sends them)."""
    permissions.require_researcher(user, "Scoring a model")
    if predictions is not None and hasattr(predictions, "read"):
        predictions = predictions.read()
    endpoint, judge, label = (endpoint or "").strip(), (judge or "").strip(), (label or "").strip()
    mode = _check_request(release, label, method, predictions is not None, endpoint, judge, anchor)
    scored = scoring_release(release)
    _check_items(release, mode, scored.items)
    answers = parse_predictions(predictions, scored, label=label) if predictions is not None else {}
    names = [n for n in (endpoint, judge) if n]
    client = get_client()
    try:
        check_endpoints(client, names)  # unknown endpoint or unset key: said now, not after a failed job
    finally:
        client.close()
    bundle = _private_bundle(release)
    scored_with = _scored_with(release, bundle, names)
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
        _queue_scoring(score, mode, scored.items, user=user)
    score.refresh_from_db()
    return score


def _check_request(release: Release, label: str, method: str, uploaded: bool, endpoint: str, judge: str, anchor) -> scoring.Mode:
    """The scoring mode of `method`, once the release, the label and what the mode needs are checked."""
    if not release.is_frozen:
        raise Conflict(
            gettext("Release %(version)s is not frozen: freeze it first, so its scores name fixed content.")
            % {"version": release.version}
        )
    if not label:
        raise DomainError(gettext("Name the model: its label is how the leaderboard shows it."))
    if method not in Score.Method.values:
        raise DomainError(
            gettext("Unknown scoring method '%(method)s'; choose among %(methods)s.")
            % {"method": method, "methods": ", ".join(Score.Method.values)}
        )
    mode = scoring.MODES[method]
    if uploaded == bool(endpoint):
        raise DomainError(gettext("Either upload a predictions file or name an endpoint to ask, not both."))
    if not mode.takes("answers") and uploaded:
        raise DomainError(
            gettext(
                "Multiple-choice items are scored under CircularEval, which asks the model each question with its "
                "options rotated: name the model's endpoint instead of uploading answers."
            )
        )
    if mode.takes("judge") and not judge:
        raise DomainError(gettext("Name the judge endpoint for pointwise or pairwise scoring."))
    if mode.takes("anchor"):
        check_anchor(release, anchor)
    return mode


def check_anchor(release: Release, anchor) -> None:
    """What a pairwise score (or a window scoring pairwise) compares with: one of the owners' own
    scores on this release that kept its answers."""
    if anchor is None or anchor.release_id != release.pk or not anchor.answers:
        raise DomainError(
            gettext("Pairwise scoring needs an anchor: a model already on this release's leaderboard with answers.")
        )
    if not selectors.is_owners_score(anchor, release):
        raise DomainError(
            gettext("%(label)s is an outside team's submission: a pairwise score's anchor must be one of your own scores.")
            % {"label": anchor.label}
        )


def _check_items(release: Release, mode: scoring.Mode, rows) -> None:
    """The release has items the mode scores."""
    if not mode.takes("answers") and not any(item.is_mcq and item.answer for item in rows):
        raise DomainError(
            gettext("Release %(version)s has no multiple-choice item with an answer key.") % {"version": release.version}
        )
    if mode.takes("answers") and all(item.is_mcq for item in rows):
        raise DomainError(gettext("Release %(version)s has no open question to judge.") % {"version": release.version})


def _queue_scoring(score: Score, mode: scoring.Mode, rows, *, user) -> None:
    """The score's job, its total the calls the mode makes and its estimate in its params."""
    endpoint, judge, answers = score.endpoint, score.judge, score.answers
    open_ids = [item.id for item in rows if not item.is_mcq]
    answered = len(open_ids) if endpoint and mode.takes("answers") else 0
    calls = answered + mode.judge_calls * sum(map(mode.scores, rows))
    job = jobs.create_job(
        SCORE_JOB,
        user=user,
        benchmark=score.release.benchmark,
        total=calls or len(rows),
        params={"score": score.pk, "estimate": estimate(rows, mode, endpoint=endpoint, judge=judge, answers=answers)},
    )
    Score.objects.filter(pk=score.pk).update(job=job)
    jobs.enqueue(job)


def submit_answers(
    release: Release,
    *,
    user,
    label: str,
    method: str,
    answers: dict[str, str],
    judge: str,
    anchor: Score | None,
    keys: list[str],
    estimated: dict,
) -> Score:
    """Score already checked answers to the items `keys` of a frozen release as a job, on the same
    path as `submit` (the caller, e.g. an evaluation window, decided who may and checked the file;
    `estimated` is `estimate(...)` for those items). Call inside the caller's transaction: the job
    starts when it commits."""
    mode = scoring.MODES[method]
    bundle = _private_bundle(release)
    scored_with = {**_scored_with(release, bundle, [judge] if judge else []), "items": len(keys)}
    score = Score.objects.create(
        release=release,
        label=label,
        method=method,
        source=Score.Source.UPLOAD,
        judge=judge,
        anchor=anchor,
        answers=answers,
        scored_with=scored_with,
        created_by=user,
    )
    job = jobs.create_job(
        SCORE_JOB,
        user=user,
        benchmark=release.benchmark,
        total=max(1, mode.judge_calls * len(keys)),
        params={"score": score.pk, "estimate": estimated, "items": list(keys)},
    )
    Score.objects.filter(pk=score.pk).update(job=job)
    score.job = job
    jobs.enqueue(job)
    return score


def check_endpoints_now(names: list[str]) -> None:
    """An unknown endpoint or an unset key, said now rather than after a failed job."""
    client = get_client()
    try:
        check_endpoints(client, [n for n in names if n])
    finally:
        client.close()


def item_values(score: Score, items) -> dict[str, float]:
    """{item id: value on a 0-1 scale} of the score's model on `items` (harness items), read from
    the rows its job recorded with the mode's own item_results; empty when not scored (yet)."""
    mode = scoring.MODES[score.method]
    if mode.item_results is None or score.status != Score.Status.DONE:
        return {}
    return {key: value for key, (value, _label) in mode.item_results(score_rows(score), items, score_model(score)).items()}


def estimate(rows, mode: scoring.Mode, *, endpoint: str, judge: str, answers: dict) -> dict:
    """What scoring with `mode` would spend if every call were paid, as the registry says the mode
    asks (benchforge_harness.scoring.Estimate): {"calls", "prompt_tokens", "completion_tokens",
    "cost" (None: an endpoint has no prices), "per_endpoint"}."""
    plan = scoring.Estimate()
    plan.add_mode(mode, rows, model=endpoint, judge=judge, answers=answers)
    priced = plan.priced(get_endpoint)
    return {
        **{key: priced[key] for key in ("calls", "prompt_tokens", "completion_tokens", "cost")},
        "per_endpoint": priced["lines"],
    }


def spending(score: Score) -> dict:
    """The score's estimate (made before it ran) and what its job spent, from the usage ledger."""
    if score.job_id is None:
        return {"estimate": None, "usage": None}
    return {"estimate": score.job.params.get("estimate"), "usage": usage_of([score.job_id])}


def _private_bundle(release: Release) -> dict:
    """The private bundle's sha256 and the version of the harness it carries (from its manifest,
    the archive's first entry): what the score card's commands install and run."""
    found = release.files.filter(kind=ReleaseFile.Kind.PRIVATE_TAR).first()
    if found is None:
        return {"sha256": "", "harness_version": None}
    manifest = {}
    with default_storage.open(found.storage_name, "rb") as handle, tarfile.open(fileobj=handle, mode="r|gz") as archive:
        first = archive.next()
        if first is not None and first.name.endswith(f"/{MANIFEST}"):
            manifest = json.load(archive.extractfile(first))
    return {"sha256": found.sha256, "harness_version": manifest.get("harness_version")}


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
    if run.params.get("items") is not None:  # a part of the release (an evaluation window's split)
        keys = set(run.params["items"])
        rows = [item for item in rows if item.id in keys]
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
        scored = mode.run(client, rows, sink=sink.scoped(f"{score_step(score)}:"), **mode.accepts(settings))
        (results,) = scored.results["models"].values()
        if "elo" in scored.results:
            results["elo"] = scored.results["elo"]
    except (InputError, ConfigError, LLMError) as exc:
        # Caused by the models file, an endpoint or the inputs, not by a bug: the job's message says
        # why, and the server console gets no traceback for it.
        Score.objects.filter(pk=score.pk).update(status=Score.Status.FAILED)
        raise DomainError(gettext("Scoring stopped: %(reason)s") % {"reason": exc}) from None
    except Exception:
        Score.objects.filter(pk=score.pk).update(status=Score.Status.FAILED)
        raise
    finally:
        sink.close()  # what is still buffered is recorded, also when scoring stopped on an error
        client.close()
    Score.objects.filter(pk=score.pk).update(status=Score.Status.DONE, results=metrics.finite(results))
    score.status = Score.Status.DONE
    for listener in _score_listeners:
        try:
            listener(score)
        except Exception:  # what follows a score never undoes it
            log.exception("a listener of finished scores failed on score %s", score.pk)
    return {"scored": headline(score.method, results)}


# Stages above exports that follow the leaderboard (item analysis) register what to do when a score is
# finished: exports imports no app above it.
_score_listeners: list = []


def register_score_listener(listener) -> None:
    """`listener(score)` is called when a score's job has finished scoring it (done)."""
    if listener not in _score_listeners:
        _score_listeners.append(listener)


def score_step(score: Score) -> str:
    """The sink prefix under which a score's job keeps the harness's rows (see run_score)."""
    return "judge" if scoring.MODES[score.method].takes("judge") else score.method


def _scored_with(release: Release, bundle: dict, endpoints: list[str]) -> dict:
    """What a score was made with: the release, its private bundle, the harness, the endpoints' settings."""
    return {
        "release": release.version,
        "benchmark": release.benchmark.slug,
        "bundle_sha256": bundle["sha256"],
        "bundle_harness_version": bundle["harness_version"],
        "harness_version": benchforge_harness.__version__,
        "endpoints": {name: _endpoint_settings(name) for name in endpoints},
    }


def score_model(score: Score) -> str:
    """The model's name in those rows: the endpoint asked under CircularEval, else the label answers go by."""
    return score.endpoint if score.method == "mcq" else score.label


def score_rows(score: Score) -> dict[str, dict]:
    """{key: row} the score's job recorded through its sink, keyed as the harness wrote them (each
    scoring mode's item_results reads them)."""
    if score.job_id is None:
        return {}
    prefix = f"{score_step(score)}:"
    return {key[len(prefix) :]: data for key, data in recorded_rows(score.job_id, prefix=prefix)}


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
    """The score's answers in the one predictions format (benchforge_harness.release.PREDICTIONS_FORMAT), in release order."""
    order = score.release.items.order_by("order").values_list("key", flat=True)
    return "".join(
        json.dumps({"id": key, "model": score.label, "answer": score.answers[key]}, ensure_ascii=False) + "\n"
        for key in order
        if key in score.answers
    )


# The harness extra that installs the SDK of an endpoint's provider (benchforge_harness/pyproject.toml).
PROVIDER_EXTRAS = {"openai": "openai", "zhipuai": "zai"}


def reproduce_commands(score: Score) -> list[str]:
    """The shell commands that score the same answers again with the private bundle's own harness,
    on a machine with only Python: run from the folder the bundle was downloaded to (with the
    predictions file and a models.toml declaring the endpoints as the card shows them), they check
    the download, unpack it, install the bundle's harness wheel (and its endpoints' SDK) into an
    environment of its own, verify the bundle and score. The wheel, and the package `python -m`
    runs, are those of the harness the bundle carries, which a frozen release keeps."""
    release = score.release
    bundle = f"{release.top}-private.tar.gz"
    sha = score.scored_with.get("bundle_sha256", "")
    version = score.scored_with.get("bundle_harness_version") or score.scored_with.get("harness_version")
    version = version or benchforge_harness.__version__
    program = f"python -m {distribution.import_name(version)}"
    providers = {endpoint.get("provider") for endpoint in score.scored_with.get("endpoints", {}).values()}
    extras = ",".join(sorted({PROVIDER_EXTRAS[p] for p in providers if p in PROVIDER_EXTRAS})) or "openai"
    steps = [
        f"echo '{sha}  {bundle}' | sha256sum -c -",
        f"tar xzf {bundle}",
        "python -m venv harness-env && . harness-env/bin/activate",
        f'pip install "./{release.top}/{distribution.wheel_name(version)}[{extras}]"',
        f"{program} verify {release.top}",
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
        },
        program,
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
