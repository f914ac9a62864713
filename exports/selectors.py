"""Reads for releases: a benchmark's releases, one release, its files and scores as a user may
see them (the pages and the API ask here), the navigation's count and the diff page's entries."""

from django.http import Http404
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from annotation.models import Item
from annotation.workflow import ACCEPTED, QC_PASSED, REWRITTEN
from benchforge.permissions import is_researcher
from jobs.selectors import work_state

from .models import Release, Score


def releases_of(benchmark):
    """The benchmark's releases, newest first."""
    return Release.objects.filter(benchmark=benchmark).order_by("-created_at")


def release_state(release: Release) -> dict:
    """What a person sees of a release, read from its build job (jobs.selectors.work_state, as QC runs
    and rewrite batches): while the build is not finished, or when it failed, was cancelled or lost
    its worker, the job's state with its reason; once it succeeded (or with no build), the release's."""
    return work_state([release.job] if release.job_id else [], label=release.get_status_display(), code=release.status)


def release_rows(benchmark) -> list[Release]:
    """The benchmark's releases, newest first, each with its `state` (release_state)."""
    releases = list(releases_of(benchmark).select_related("job"))
    for release in releases:
        release.state = release_state(release)
    return releases


def get_release(benchmark, version: str) -> Release:
    found = Release.objects.filter(benchmark=benchmark, version=version).select_related("job", "source").first()
    if found is None:
        raise Http404(f"No release {version} of this benchmark.")
    return found


def find_release(benchmark, version: str) -> Release | None:
    """The release of that version, or None (a diff page names what to compare with)."""
    return Release.objects.filter(benchmark=benchmark, version=version).first() if version else None


def built_releases_besides(release: Release):
    """The benchmark's other built releases, newest first: what this one can be compared with."""
    return releases_of(release.benchmark_id).exclude(pk=release.pk).exclude(built_at=None)


def files_for(user, release: Release) -> list:
    """The release's files the user may download: the private bundle is for researchers."""
    return [f for f in release.files.all() if not f.is_private or is_researcher(user)]


def get_file(release: Release, kind: str):
    """The release's file of that kind (whoever asks: the caller checks who may have it)."""
    found = release.files.filter(kind=kind).first()
    if found is None:
        raise Http404(f"Release {release.version} has no {kind} file (yet).")
    return found


# Scores on a release that are not the owners' own (an evaluation server's outside teams): the stage
# that makes them registers which they are (exports imports no app above it). They stay off the
# internal leaderboard, its anchors and item analysis; their own pages still reach them by pk.
_outside_finders: list = []


def register_outside_scores(find) -> None:
    """`find(release)` returns a queryset of the pks of the release's scores that are not the owners'."""
    if find not in _outside_finders:
        _outside_finders.append(find)


def owners_scores(queryset, release: Release):
    for find in _outside_finders:
        queryset = queryset.exclude(pk__in=find(release))
    return queryset


def owners_scores_in(benchmark):
    """The owners' scores on every release of a benchmark (for choice lists that span releases)."""
    scores = Score.objects.filter(release__benchmark=benchmark)
    for release in Release.objects.filter(benchmark=benchmark).only("pk"):
        scores = owners_scores(scores, release)
    return scores


def is_owners_score(score, release: Release) -> bool:
    """False for an outside team's score: such a score is no anchor and no study's subject."""
    return score.release_id == release.pk and owners_scores(release.scores.filter(pk=score.pk), release).exists()


def scores_of(release: Release):
    """The release's leaderboard: the owners' scores by method, newest first."""
    return owners_scores(release.scores.select_related("job", "release", "anchor"), release).order_by("method", "-created_at")


def get_score(release: Release, pk: int):
    found = release.scores.select_related("job", "anchor", "created_by").filter(pk=pk).first()
    if found is None:
        raise Http404(f"No score #{pk} on release {release.version}.")
    return found


def find_score(release: Release, pk: int | None):
    return release.scores.filter(pk=pk).first() if pk else None


def anchor_choices(release: Release):
    """Scores a pairwise score can take as its anchor: the owners' scores that kept their answers
    (the choice list reads labels only; the chosen score's answers load when scoring reads them)."""
    return owners_scores(release.scores.exclude(answers={}).defer("answers", "results", "scored_with"), release)


def waiting_for(user, benchmark):
    """The navigation's Release count, for researchers (they build releases): items that passed
    every stage the benchmark uses and are in no frozen release yet."""
    if not is_researcher(user):
        return None
    return Item.objects.filter(benchmark=benchmark, status__in=(ACCEPTED, REWRITTEN, QC_PASSED))


# ---- the diff page ------------------------------------------------------------------------------

FIELD_LABELS = {
    "question": _("Question"),
    "reference_answer": _("Reference answer"),
    "criteria": _("Criteria"),
    "answer": _("Answer key"),
    "choices": _("Choices"),
    "hint": _("Hint"),
    "history": _("Dialogue history"),
    "description": _("Image description"),
    "images": _("Images"),
    "task": _("Task"),
    "category": _("Category"),
    "subcategory": _("Subcategory"),
    "question_type": _("Question type"),
    "split": _("Split"),
    "seed_id": pgettext_lazy("seed question", "Seed"),
}


def shown_value(value) -> str:
    """A row's value as text a person reads: lists one per line, choices as "A. text", turns as "role: text"."""
    if value is None or value == "" or value == [] or value == {}:
        return ""
    if isinstance(value, dict):
        return "\n".join(f"{key}. {text}" for key, text in value.items())
    if isinstance(value, list):
        return "\n".join(f"{v.get('role', '')}: {v.get('content', '')}" if isinstance(v, dict) else str(v) for v in value)
    return str(value)


def task_label(row: dict) -> str:
    """A release row's task with its category: "Counting (Perception & Understanding)"."""
    where = " / ".join(part for part in (row.get("category"), row.get("subcategory")) if part)
    return f"{row.get('task') or '—'} ({where})" if where else row.get("task") or "—"


def diff_entry(entry: dict) -> dict:
    row = entry["row"]
    return {
        "id": entry["id"],
        "item_id": entry["item_id"],
        "left_out": entry.get("left_out", ""),
        "question": row.get("question") or "",
        "task": task_label(row),
        "fields": [
            {
                "label": FIELD_LABELS.get(f["field"], f["field"].replace("_", " ").capitalize()),
                "old": shown_value(f["old"]),
                "new": shown_value(f["new"]),
            }
            for f in entry.get("fields", ())
        ],
    }
