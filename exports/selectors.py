"""Reads for releases: a benchmark's releases, one release, its files and scores as a user may
see them (the pages and the API ask here), the navigation's count and the diff page's entries."""

from django.http import Http404
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from annotation.models import Item
from annotation.workflow import ACCEPTED, QC_PASSED, REWRITTEN
from benchforge.permissions import is_researcher

from .models import Release


def releases_of(benchmark):
    """The benchmark's releases, newest first."""
    return Release.objects.filter(benchmark=benchmark).order_by("-created_at")


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


def scores_of(release: Release):
    """The release's leaderboard: its scores by method, newest first."""
    return release.scores.select_related("job", "release", "anchor").order_by("method", "-created_at")


def get_score(release: Release, pk: int):
    found = release.scores.select_related("job", "anchor", "created_by").filter(pk=pk).first()
    if found is None:
        raise Http404(f"No score #{pk} on release {release.version}.")
    return found


def find_score(release: Release, pk: int | None):
    return release.scores.filter(pk=pk).first() if pk else None


def anchor_choices(release: Release):
    """Scores a pairwise score can take as its anchor: those that kept their answers."""
    return release.scores.exclude(answers={})


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
