"""Every write of the human-evaluation stage: plan and start a study, save a rating, import
ratings, close a study. Reads (queues, agreement, exports) are in selectors.

Sampling follows MLLM-Bench: N items per task among the release's open questions that every
chosen score has an answer and a readable judge verdict for, the same items for every model; one
seed makes the sample, the assignment and every rater's order reproducible."""

import datetime
import json
import random
from collections import Counter
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count, F, Max, Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _

from benchforge import permissions
from benchforge.concurrency import lock
from benchforge.errors import Conflict, DomainError
from curation.models import Benchmark
from exports.models import Score
from exports.selectors import is_owners_score
from jobs import services as jobs

from . import selectors
from .models import Rating, RatingTally, Study, StudyFigures, StudyItem, StudyRater

MIN_RATINGS_PER_ITEM = 2
MAX_RATINGS_PER_ITEM = 20
MAX_STUDY_ANSWERS = 5000
VOTES = ("model", "anchor", "unable_one", "unable_two")
# The rating page's keys for the votes, as the answers are shown (answer 1 first).
POSITIONAL_VOTES = ("answer1", "answer2", "unable_one", "unable_two")


@dataclass(frozen=True)
class Plan:
    """What a study would hold, before it starts: enough to judge its cost."""

    keys_by_task: dict  # {task: [release item ids]}
    scores: list
    raters: list
    ratings_per_item: int
    minutes_per_rating: float
    passes: list | None = None  # extraction: [(score, pass as selectors.mcq_passes reads it)]

    @property
    def items(self) -> int:
        return sum(len(keys) for keys in self.keys_by_task.values())

    @property
    def answers(self) -> int:
        return len(self.passes) if self.passes is not None else self.items * len(self.scores)

    @property
    def ratings(self) -> int:
        return self.answers * self.ratings_per_item

    @property
    def rater_hours(self) -> float:
        return self.ratings * self.minutes_per_rating / 60

    @property
    def per_rater(self) -> float:
        return self.ratings / len(self.raters) if self.raters else 0

    def summary(self) -> dict:
        return {
            "items": self.items,
            "answers": self.answers,
            "ratings": self.ratings,
            "raters": len(self.raters),
            "ratings_per_rater": self.per_rater,
            "rater_hours": round(self.rater_hours, 2),
            "hours_per_rater": round(self.rater_hours / len(self.raters), 2) if self.raters else 0,
            "tasks": {task: len(keys) for task, keys in self.keys_by_task.items()},
        }


def plan_study(
    release,
    *,
    user,
    mode: str,
    scores: list,
    raters: list,
    per_task: int,
    ratings_per_item: int = MIN_RATINGS_PER_ITEM,
    seed: int = 0,
    minutes_per_rating: float = 1.5,
) -> Plan:
    """Check a study's settings and sample its items; saves nothing (the cost estimate)."""
    permissions.require_researcher(user, "Planning a human evaluation")
    if mode not in Study.Mode.values:
        raise DomainError(
            _("Unknown study mode '%(mode)s'; choose among %(modes)s.") % {"mode": mode, "modes": ", ".join(Study.Mode.values)}
        )
    if not release.is_frozen:
        raise Conflict(
            _("Release %(version)s is not frozen: studies rate the answers scored on a frozen release.")
            % {"version": release.version}
        )
    if not scores:
        raise DomainError(_("Choose at least one leaderboard score whose answers people will rate."))
    for score in scores:
        if score.release_id != release.pk:
            raise DomainError(_("Score #%(id)s is not on release %(version)s.") % {"id": score.pk, "version": release.version})
        if not is_owners_score(score, release):
            raise DomainError(
                _("%(label)s is an outside team's submission: studies rate the answers of your own scores.")
                % {"label": score.label}
            )
        if score.method != selectors.SCORE_METHODS[mode]:
            raise DomainError(
                _("%(label)s was scored %(method)s; a %(mode)s study rates %(wanted)s scores only.")
                % {
                    "label": score.label,
                    "method": score.get_method_display().lower(),
                    "mode": mode,
                    "wanted": selectors.SCORE_METHODS[mode],
                }
            )
        if score.status != Score.Status.DONE:
            raise Conflict(
                _("%(label)s is not scored yet (%(status)s): wait for its job.")
                % {"label": score.label, "status": score.get_status_display()}
            )
    if selectors.compares_with_anchor(mode) and len({s.anchor_id for s in scores}) != 1:
        raise DomainError(_("The scores of a pairwise study must share one anchor model."))
    if not (MIN_RATINGS_PER_ITEM <= ratings_per_item <= MAX_RATINGS_PER_ITEM):
        raise DomainError(
            _("Ask for %(min)s to %(max)s ratings per answer: agreement between people needs two.")
            % {"min": MIN_RATINGS_PER_ITEM, "max": MAX_RATINGS_PER_ITEM}
        )
    if len(set(r.pk for r in raters)) < ratings_per_item:
        raise DomainError(
            _("Pick at least %(n)s raters: each answer gets %(n)s ratings by different people.") % {"n": ratings_per_item}
        )
    for rater in raters:
        if not permissions.is_member(rater, release.benchmark):
            raise DomainError(
                _("%(user)s is not a member of %(benchmark)s: add them first.")
                % {"user": rater.username, "benchmark": release.benchmark.name}
            )
    if per_task < 1:
        raise DomainError(_("Sample at least one item per task."))
    if not (0 < minutes_per_rating <= 120):
        raise DomainError(_("Minutes per rating must be between 0 and 120."))
    if selectors.check_of(mode).verdicts is None:  # people check the passes the mode asked itself
        plan = _plan_extraction(scores, raters, per_task, ratings_per_item, seed, minutes_per_rating)
    else:
        plan = _plan_judged(release, scores, raters, per_task, ratings_per_item, seed, minutes_per_rating)
    if plan.answers > MAX_STUDY_ANSWERS:
        raise DomainError(
            _("That would be %(n)s answers to rate; plan at most %(max)s per study.")
            % {"n": plan.answers, "max": MAX_STUDY_ANSWERS}
        )
    return plan


def _plan_judged(release, scores, raters, per_task, ratings_per_item, seed, minutes_per_rating) -> Plan:
    verdicts = {score.pk: selectors.judge_verdicts(score) for score in scores}
    rows = selectors.release_rows(release)
    candidates: dict[str, list[str]] = {}
    for key, row in rows.items():
        if all(key in verdicts[s.pk] for s in scores):
            candidates.setdefault(row.get("task") or "(none)", []).append(key)
    if not candidates:
        raise DomainError(_("No release item has an answer and a readable judge verdict from every chosen score."))
    rng = random.Random(seed)
    keys_by_task = {}
    for task in sorted(candidates):
        keys = sorted(candidates[task])
        keys_by_task[task] = sorted(rng.sample(keys, min(per_task, len(keys))))
    return Plan(keys_by_task, list(scores), list(raters), ratings_per_item, minutes_per_rating)


# Extraction checks sample the passes a reader decided first, the LLM extractor's (rarer) before the
# rule's, so the study measures both; passes nothing could read come last.
READER_ORDER = ("extractor", "rule", "")


def _plan_extraction(scores, raters, per_task, ratings_per_item, seed, minutes_per_rating) -> Plan:
    """N passes per task of each score, one pass per item at most, taken round-robin from the
    passes read by the extractor, by the rules, and by neither (each group shuffled by the seed)."""
    rng = random.Random(seed)
    chosen, keys_by_task = [], {}
    for score in scores:
        by_task: dict[str, dict[str, list]] = {}
        for found in selectors.mcq_passes(score):
            by_task.setdefault(found["task"] or "(none)", {}).setdefault(found["reader"], []).append(found)
        for task in sorted(by_task):
            groups = []
            for reader in READER_ORDER:
                group = sorted(by_task[task].get(reader, []), key=lambda p: (p["key"], p["pass"]))
                rng.shuffle(group)
                groups.append(group)
            taken, keys = [], set()
            while len(taken) < per_task and any(groups):
                for group in groups:
                    while group and group[0]["key"] in keys:
                        group.pop(0)
                    if group and len(taken) < per_task:
                        found = group.pop(0)
                        taken.append(found)
                        keys.add(found["key"])
            chosen.extend((score, found) for found in taken)
            keys_by_task.setdefault(task, set()).update(keys)
    if not chosen:
        raise DomainError(_("The chosen scores hold no multiple-choice pass with a model's reply to read."))
    return Plan(
        {task: sorted(keys) for task, keys in sorted(keys_by_task.items())},
        list(scores),
        list(raters),
        ratings_per_item,
        minutes_per_rating,
        passes=chosen,
    )


def create_study(release, *, user, title: str, mode: str, scores: list, raters: list, per_task: int, **settings) -> Study:
    """Plan, then save the study, its answers and every rating owed, balanced over the raters."""
    title = (title or "").strip()
    if not title:
        raise DomainError(_("Give the study a title."))
    plan = plan_study(release, user=user, mode=mode, scores=scores, raters=raters, per_task=per_task, **settings)
    seed = settings.get("seed", 0)
    judged = plan.passes is None
    rows = selectors.release_rows(release) if judged else {}
    verdicts = {score.pk: selectors.judge_verdicts(score) for score in scores} if judged else {}
    with transaction.atomic():
        lock(Benchmark, release.benchmark_id)  # studies created at once take turns for their numbers
        number = (Study.objects.filter(benchmark=release.benchmark).aggregate(n=Max("number"))["n"] or 0) + 1
        study = Study.objects.create(
            benchmark=release.benchmark,
            release=release,
            number=number,
            title=title[:200],
            mode=mode,
            per_task=per_task,
            ratings_per_item=plan.ratings_per_item,
            seed=seed,
            minutes_per_rating=plan.minutes_per_rating,
            created_by=user,
        )
        study.scores.set(scores)
        rng = random.Random(f"study:{seed}")
        people = sorted({r.pk: r for r in raters}.values(), key=lambda r: r.username)
        rng.shuffle(people)  # pseudonyms say nothing about names
        study_raters = StudyRater.objects.bulk_create(
            [StudyRater(study=study, user=u, pseudonym=f"R{n}", seed=rng.randrange(2**31)) for n, u in enumerate(people, 1)]
        )
        items = _judged_items(study, plan, rows, verdicts, rng) if judged else _extraction_items(study, plan, rng)
        ratings = Rating.objects.bulk_create(_assign(study, items, study_raters, plan.ratings_per_item, rng))
        owed = Counter((r.rater_id, r.item.score_id) for r in ratings)
        RatingTally.objects.bulk_create(
            RatingTally(study=study, rater_id=rater, score_id=score, owed=n) for (rater, score), n in owed.items()
        )
    return study


def _extraction_items(study, plan, rng) -> list[StudyItem]:
    rows = {row["id"]: row for row in study.release.items.values_list("row", flat=True)}
    passes = list(plan.passes)
    rng.shuffle(passes)
    return StudyItem.objects.bulk_create(
        [
            StudyItem(
                study=study,
                score=score,
                key=found["key"],
                task=found["task"],
                category=rows.get(found["key"], {}).get("category") or "",
                answer=found["output"],
                options=found["options"],
                pass_index=found["pass"],
                judge={"choice": found["choice"], "reader": found["reader"], "method": found["method"]},
                position=n,
            )
            for n, (score, found) in enumerate(passes)
        ]
    )


def _judged_items(study, plan, rows, verdicts, rng) -> list[StudyItem]:
    scores = plan.scores
    answers = [(score, key, rows[key]) for task in plan.keys_by_task for key in plan.keys_by_task[task] for score in scores]
    rng.shuffle(answers)
    return StudyItem.objects.bulk_create(
        [
            StudyItem(
                study=study,
                score=score,
                key=key,
                task=row.get("task") or "",
                category=row.get("category") or "",
                answer=score.answers.get(key, ""),
                anchor_answer=score.anchor.answers.get(key, "") if score.anchor_id else "",
                judge=verdicts[score.pk][key],
                position=n,
            )
            for n, (score, key, row) in enumerate(answers)
        ]
    )


def _assign(study, items, raters, per_item: int, rng: random.Random) -> list[Rating]:
    """Each answer to `per_item` different raters, always the least loaded ones (ties by the seed),
    so loads differ by one at most; then each rater's own order and answer sides from their seed."""
    load = {r.pk: 0 for r in raters}
    owed: dict[int, list] = {r.pk: [] for r in raters}
    for item in items:
        chosen = sorted(raters, key=lambda r: (load[r.pk], rng.random()))[:per_item]
        for rater in chosen:
            load[rater.pk] += 1
            owed[rater.pk].append(item)
    ratings = []
    for rater in raters:
        own = random.Random(rater.seed)
        queue = owed[rater.pk]
        own.shuffle(queue)
        for position, item in enumerate(queue):
            ratings.append(Rating(study=study, item=item, rater=rater, position=position, anchor_first=own.random() < 0.5))
    return ratings


def save_rating(rating: Rating, *, user, score=None, vote: str = "", choice: str = "", reason: str = "") -> Rating:
    """A rater's own rating (saved again while the study is open: the last save counts).
    `vote` is positional as the rater saw it (answer1, answer2, unable_one, unable_two); `choice`
    (extraction) a letter of the options shown, or "none"."""
    if rating.rater.user_id != user.pk:
        raise DomainError(_("This rating is someone else's."))
    if rating.study.status != Study.Status.OPEN:
        raise Conflict(_("Study %(number)s is closed: its ratings no longer change.") % {"number": rating.study.number})
    reason = (reason or "").strip()
    rated = selectors.rates(rating.study.mode)
    if rated == "score":
        if isinstance(score, bool) or not isinstance(score, int) or not 1 <= score <= 10:
            raise DomainError(_("Give a score from 1 to 10 (keys 1-9, and 0 for 10)."))
        if not reason:
            raise DomainError(_("Say briefly why: a score without a reason cannot be checked."))
        rating.score, rating.vote = score, ""
    elif rated == "choice":
        problem = choice_problem(rating.item, choice)
        if problem:
            raise DomainError(problem)
        rating.choice = choice
    else:
        if vote not in POSITIONAL_VOTES:
            raise DomainError(_("Choose one of the four outcomes (keys 1-4)."))
        rating.vote, rating.score = side_of(vote, rating.anchor_first), None
    rating.reason = reason[:5000]
    rating.saved_at = timezone.now()
    given = {field: getattr(rating, field) for field in ("score", "vote", "choice", "reason", "saved_at")}
    with transaction.atomic():
        # A first save counts in the rater's tally once, however many saves of it arrive at once:
        # this conditional UPDATE matches for one of them only (a later save writes unconditionally).
        if Rating.objects.filter(pk=rating.pk, saved_at=None).update(**given):
            RatingTally.objects.filter(rater_id=rating.rater_id, score_id=rating.item.score_id).update(saved=F("saved") + 1)
        else:
            Rating.objects.filter(pk=rating.pk).update(**given)
        ratings_changed(rating.study)
    return rating


NO_CHOICE = "none"


def choice_problem(item: StudyItem, choice) -> str:
    """Why `choice` is not a reading of this extraction item ("" when it is): a shown letter or none."""
    if choice == NO_CHOICE or (isinstance(choice, str) and choice in item.options):
        return ""
    letters = ", ".join(item.options)
    return _("Choose the letter the reply commits to (%(letters)s) or none, got '%(got)s'.") % {
        "letters": letters,
        "got": str(choice)[:10],
    }


def side_of(positional: str, anchor_first: bool) -> str:
    """The side a positional vote favours, given which answer was shown first."""
    if positional == "answer1":
        return "anchor" if anchor_first else "model"
    if positional == "answer2":
        return "model" if anchor_first else "anchor"
    return positional


def positional_of(side: str, anchor_first: bool) -> str:
    if side == "model":
        return "answer2" if anchor_first else "answer1"
    if side == "anchor":
        return "answer1" if anchor_first else "answer2"
    return side


_close_listeners: list = []


def register_close_listener(listener) -> None:
    """`listener(study, user)` is called once a study's closing has committed (its ratings are final)."""
    if listener not in _close_listeners:
        _close_listeners.append(listener)


def close_study(study: Study, *, user) -> Study:
    permissions.require_researcher(user, "Closing a study")
    if Study.objects.filter(pk=study.pk).exclude(status=Study.Status.CLOSED).update(status=Study.Status.CLOSED):
        for listener in _close_listeners:
            transaction.on_commit(lambda listener=listener: listener(study, user))
    study.status = Study.Status.CLOSED
    return study


def cite_on_card(study: Study, *, user, cite: bool = True) -> Study:
    """Cite a closed study on its release's card page (or stop): its ratings and headline agreement
    then show beside the card. The frozen bundle's own README never changes."""
    permissions.require_researcher(user, "Citing a study on the release card")
    if cite and study.status != Study.Status.CLOSED:
        raise Conflict(_("Close study %(number)s first: a card cites finished studies only.") % {"number": study.number})
    if cite and not study.ratings.exclude(saved_at=None).exists():
        raise Conflict(_("Study %(number)s has no saved rating to cite.") % {"number": study.number})
    Study.objects.filter(pk=study.pk).update(cited_on_card=cite)
    study.cited_on_card = cite
    return study


# ---- import ----------------------------------------------------------------------------------------

MAX_IMPORT_BYTES = 20 * 1024 * 1024


def import_ratings(study: Study, data: bytes, *, user) -> int:
    """Ratings collected elsewhere, in the export's format (one JSON object a line: item, model,
    rater, score or vote, reason, time). Every line is checked first; a file with any problem
    saves nothing and says which lines. Raters unknown to the study join it under their pseudonym."""
    permissions.require_researcher(user, "Importing ratings")
    if study.status != Study.Status.OPEN:
        raise Conflict(_("Study %(number)s is closed: its ratings no longer change.") % {"number": study.number})
    if len(data) > MAX_IMPORT_BYTES:
        raise DomainError(_("The file is larger than %(mb)s MB; split it.") % {"mb": MAX_IMPORT_BYTES // (1024 * 1024)})
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DomainError(_("The ratings file is not UTF-8 text (byte %(byte)s).") % {"byte": exc.start}) from None
    items = {(i.key, i.score.label): i for i in study.items.select_related("score")}
    raters = {r.pseudonym: r for r in study.raters.all()}
    taken = set(study.ratings.exclude(saved_at=None).values_list("item_id", "rater__pseudonym"))
    errors, rows, seen = [], [], set()
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"line {n}: not JSON ({exc.msg})")
            continue
        if not isinstance(row, dict):
            errors.append(f"line {n}: expected an object")
            continue
        problem, parsed = _imported_row(study, row, items)
        if problem:
            errors.append(f"line {n}: {problem}")
            continue
        item, pseudonym = parsed["item"], parsed["rater"]
        if (item.pk, pseudonym) in seen or (item.pk, pseudonym) in taken:
            errors.append(f"line {n}: {pseudonym} already rated {item.key} of {item.score.label}")
            continue
        seen.add((item.pk, pseudonym))
        rows.append(parsed)
    if errors:
        shown = "; ".join(errors[:10]) + (f"; and {len(errors) - 10} more" if len(errors) > 10 else "")
        raise DomainError(_("No rating was imported: %(problems)s.") % {"problems": shown})
    if not rows:
        raise DomainError(_("The ratings file holds no rating."))
    with transaction.atomic():
        next_seed = random.Random(f"import:{study.seed}:{len(raters)}")
        for row in rows:
            if row["rater"] not in raters:
                raters[row["rater"]] = StudyRater.objects.create(
                    study=study, user=None, pseudonym=row["rater"], seed=next_seed.randrange(2**31)
                )
        for row in rows:
            rater = raters[row["rater"]]
            Rating.objects.update_or_create(
                item=row["item"],
                rater=rater,
                defaults={
                    "study": study,
                    "position": row["item"].position,
                    "score": row["score"],
                    "vote": row["vote"],
                    "choice": row["choice"],
                    "reason": row["reason"],
                    "saved_at": row["time"],
                    "source": Rating.Source.IMPORT,
                },
            )
        recount_tallies(study)
        ratings_changed(study, imported=True)
    return len(rows)


def recount_tallies(study: Study) -> None:
    """The study's tallies counted afresh from its ratings (after an import: raters may be new)."""
    counts = (
        Rating.objects.filter(study=study)
        .values("rater_id", "item__score_id")
        .annotate(owed=Count("pk"), saved=Count("pk", filter=~Q(saved_at=None)))
        .order_by()
    )
    RatingTally.objects.filter(study=study).delete()
    RatingTally.objects.bulk_create(
        RatingTally(study=study, rater_id=c["rater_id"], score_id=c["item__score_id"], owed=c["owed"], saved=c["saved"])
        for c in counts
    )


def _imported_row(study, row: dict, items: dict) -> tuple[str, dict]:
    key, model, rater = row.get("item"), row.get("model"), row.get("rater")
    if isinstance(key, int) and not isinstance(key, bool):
        key = str(key)
    if not isinstance(key, str) or not isinstance(model, str):
        return "'item' (the release item id) and 'model' (its leaderboard label) are required", {}
    item = items.get((key, model))
    if item is None:
        return f"study {study.number} has no answer of {model!r} to item {key!r}", {}
    if not isinstance(rater, str) or not rater.strip() or len(rater) > 40:
        return "'rater' must be a pseudonym of at most 40 characters", {}
    score, vote, choice = row.get("score"), row.get("vote"), ""
    rated = selectors.rates(study.mode)
    if rated == "choice":
        choice = row.get("choice")
        if problem := choice_problem(item, choice):
            return f"'choice': {problem}", {}
        score, vote = None, ""
    elif rated == "score":
        if isinstance(score, bool) or not isinstance(score, int) or not 1 <= score <= 10:
            return f"'score' must be a whole number from 1 to 10, got {score!r}", {}
        vote = ""
    else:
        if vote not in VOTES:
            return f"'vote' must be one of {', '.join(VOTES)}, got {vote!r}", {}
        score = None
    reason = row.get("reason", "")
    if not isinstance(reason, str):
        return "'reason' must be text", {}
    when = row.get("time")
    moment = timezone.now()
    if when is not None:
        try:
            moment = parse_datetime(when) if isinstance(when, str) else None
        except ValueError:
            moment = None
        if moment is None:
            return f"'time' must be an ISO 8601 date and time, got {str(when)[:40]!r}", {}
        if timezone.is_naive(moment):
            moment = moment.replace(tzinfo=datetime.UTC)
    return "", {
        "item": item,
        "rater": rater.strip(),
        "score": score,
        "vote": vote,
        "choice": choice,
        "reason": reason[:5000],
        "time": moment,
    }


# ---- the figures, stored -----------------------------------------------------------------------

FIGURES_JOB = "humaneval_figures"
# Up to this many saved ratings the figures are recomputed at once when a page asks for changed
# ones (milliseconds); above it a job recomputes them (seconds: every figure overall, per task and
# per model) and pages show the stored ones, saying they are being updated.
INLINE_FIGURES = 2000
# While raters save, a large study's figures are recomputed at most this often (an import, or a
# researcher opening the study's page, asks at once).
REFRESH_EVERY = datetime.timedelta(minutes=5)


def ratings_changed(study: Study, *, imported: bool = False) -> None:
    """A rating was saved or imported: the stored figures are out of date. A large study queues
    the job that recomputes them (once the save commits; one at a time per study) after an
    import, or after a save when they are older than REFRESH_EVERY."""
    Study.objects.filter(pk=study.pk).update(ratings_version=F("ratings_version") + 1)
    stored = StudyFigures.objects.filter(study=study).values_list("ratings", "computed_at").first()
    if stored is None or stored[0] < INLINE_FIGURES:
        return  # small: the next page that shows them recomputes them at once
    if imported or stored[1] < timezone.now() - REFRESH_EVERY:
        transaction.on_commit(lambda: queue_figures(study.pk))


def queue_figures(study_pk: int) -> None:
    if Study.objects.filter(pk=study_pk, figures_queued=False).update(figures_queued=True):
        study = Study.objects.filter(pk=study_pk).only("benchmark_id").first()
        if study is not None:
            jobs.enqueue(jobs.create_job(FIGURES_JOB, benchmark=study.benchmark_id, params={"study": study_pk}))


def run_figures(run) -> dict:
    """The job: recompute a study's figures from its saved ratings."""
    Study.objects.filter(pk=run.params["study"]).update(figures_queued=False)
    study = Study.objects.filter(pk=run.params["study"]).first()
    if study is None:
        return {"study": None}
    figures = refresh_figures(study)
    return {"study": study.number, "ratings": figures["overall"]["ratings"]}


def refresh_figures(study: Study) -> dict:
    """Compute the study's figures from its compact rows and store them with the ratings version
    they were computed at (a save meanwhile leaves them marked out of date)."""
    version = Study.objects.filter(pk=study.pk).values_list("ratings_version", flat=True).first() or 0
    figures = selectors.compute_figures(study)
    StudyFigures.objects.update_or_create(
        study=study, defaults={"figures": figures, "version": version, "ratings": figures["overall"]["ratings"]}
    )
    return figures


def current_figures(study: Study) -> dict:
    """The study's figures for a page: the stored ones; recomputed here only when none are stored
    yet or a small study's changed (a large one's job is on its way)."""
    figures, stale = selectors.cached_figures(study)
    if figures is None or (stale and figures["overall"]["ratings"] < INLINE_FIGURES):
        return refresh_figures(study)
    if stale:
        queue_figures(study.pk)
    return figures


def mark_validation(study: Study, *, user, validates: bool = True) -> Study:
    """Mark a study as the validation of its scores' judges (the leaderboard then shows it for
    them, whatever studies come later), or unmark it."""
    permissions.require_researcher(user, "Marking a study as a judge's validation")
    if validates and not study.ratings.exclude(saved_at=None).exists():
        raise Conflict(_("Study %(number)s has no saved rating: it cannot validate a judge yet.") % {"number": study.number})
    Study.objects.filter(pk=study.pk).update(validates=validates)
    study.validates = validates
    return study
