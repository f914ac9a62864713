"""Reads of the evaluation server. What a team may see of a submission is decided here, once:
its status and aggregate scores (overall and per category) of the parts it may see; never a
per-item result, a judge's text or an answer key."""

from collections import defaultdict

from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import Http404
from django.utils.translation import gettext

from benchforge import permissions
from benchforge_harness import scoring
from exports import leaderboard
from exports.models import Release, Score
from llm.selectors import usage_of

from .models import Membership, Submission, Team, Window, digest


def team_of(user, window: Window) -> Team | None:
    if not getattr(user, "is_authenticated", False):
        return None
    found = Membership.objects.filter(window=window, user=user).select_related("team").first()
    return found.team if found else None


def require_member(user, window: Window, *, team: Team | None = None) -> Team:
    mine = team_of(user, window)
    if mine is None or (team is not None and mine.pk != team.pk):
        raise PermissionDenied(gettext("Only the team's members may do this."))
    return mine


def team_for_token(token: str) -> Team | None:
    if not token or len(token) > 128:
        return None
    return Team.objects.select_related("window").filter(token_hash=digest(token)).first()


def windows_of(user):
    """The windows a person takes part in (team member), or every window for a researcher."""
    if permissions.is_researcher(user):
        return Window.objects.select_related("release__benchmark").all()
    ids = Membership.objects.filter(user=user).values_list("window_id", flat=True)
    return Window.objects.select_related("release__benchmark").filter(pk__in=ids)


def get_window(user, pk: int, *, invite: str = "") -> Window:
    """The window, for a researcher or one of its teams (404 for anyone else: its existence is not said)."""
    window = Window.objects.select_related("release__benchmark").filter(pk=pk).first()
    if window is None:
        raise Http404(gettext("No such window."))
    if permissions.is_researcher(user) or team_of(user, window) is not None:
        return window
    raise Http404(gettext("No such window."))


def get_window_for_signup(pk: int) -> Window:
    window = Window.objects.select_related("release__benchmark").filter(pk=pk).first()
    if window is None:
        raise Http404(gettext("No such window."))
    return window


def team_submissions(team: Team):
    return Submission.objects.filter(team=team).select_related("score").order_by("-created_at")


def get_submission(user, window: Window, pk: int) -> Submission:
    """A submission of the user's team (or any, for a researcher); 404 otherwise."""
    found = Submission.objects.select_related("score", "team", "window").filter(window=window, pk=pk).first()
    if found is None:
        raise Http404(gettext("No such submission."))
    if permissions.is_researcher(user):
        return found
    team = team_of(user, window)
    if team is None or found.team_id != team.pk:
        raise Http404(gettext("No such submission."))
    return found


def status_of(submission: Submission) -> str:
    return submission.score.status


def window_items(window: Window) -> list:
    """The harness items the window scores (read from the release's private rows; the platform's own use)."""
    wanted = set(window.items)
    return [item for item in leaderboard.scoring_release(window.release).items if item.id in wanted]


def _part(mode, values: dict[str, float], items) -> dict | None:
    """Mean and per-category means of `values` over `items`, in the mode's units; None without values."""
    decided = [(item, values[item.id]) for item in items if item.id in values]
    if not decided:
        return None
    groups: dict[str, list[float]] = defaultdict(list)
    for item, value in decided:
        groups[item.category or item.task or "—"].append(value)

    def shown(mean: float) -> str:
        return mode.headline_text({mode.headline: mean * mode.scale})

    overall = sum(v for _, v in decided) / len(decided)
    return {
        "value": round(overall, 6),
        "text": shown(overall),
        "n": len(decided),
        "categories": [
            {"name": name, "value": round(sum(vals) / len(vals), 6), "text": shown(sum(vals) / len(vals)), "n": len(vals)}
            for name, vals in sorted(groups.items())
        ],
    }


def scores_of(submission: Submission, items=None) -> dict:
    """What may be shown of a submission's score: {"status", "shown", "hidden", "overall"}; the
    shown part while the window is open (the whole split when nothing is hidden), the hidden part
    and the whole once it has closed. Aggregates only."""
    window = submission.window
    result = {"status": submission.score.status, "shown": None, "hidden": None, "overall": None}
    if submission.score.status != Score.Status.DONE:
        return result
    items = window_items(window) if items is None else items
    mode = scoring.MODES[window.method]
    values = leaderboard.item_values(submission.score, items)
    shown_ids = set(window.shown_items)
    result["shown"] = _part(mode, values, [i for i in items if i.id in shown_ids])
    if not window.has_hidden_part:
        result["overall"] = result["shown"]
    elif window.is_closed:
        result["hidden"] = _part(mode, values, [i for i in items if i.id not in shown_ids])
        result["overall"] = _part(mode, values, items)
    return result


def quota_of(window: Window, team: Team) -> dict:
    from django.utils import timezone

    counted = Submission.objects.filter(team=team).exclude(score__status=Score.Status.FAILED)
    day_start = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    today = counted.filter(created_at__gte=day_start).count()
    total = counted.count()
    return {
        "daily_limit": window.daily_limit,
        "total_limit": window.total_limit,
        "used_today": today,
        "used_total": total,
        "left_today": max(0, min(window.daily_limit - today, window.total_limit - total)),
    }


# ---- the public board -----------------------------------------------------------------------------


def public_release(slug: str, version: str) -> Release:
    """A frozen release that has (had) a window: its board is public. 404 for every other one."""
    release = Release.objects.select_related("benchmark").filter(benchmark__slug=slug, version=version).first()
    if release is None or not release.is_frozen or not Window.objects.filter(release=release).exists():
        raise Http404(gettext("No public leaderboard here."))
    return release


def public_entries(release: Release) -> list[dict]:
    """Every published, not hidden, scored entry of the release's windows, with what the public may
    read: the model, team, date, link, method, judge, headline and per-category figures (of the
    shown part while a window with a hidden part is open, of the whole once it is closed), the
    human-validation badge and the bundle's sha256."""
    validated = leaderboard.validations(release)
    validated_judges = {s.judge for s in Score.objects.filter(pk__in=list(validated)) if s.judge}
    rows = []
    windows = list(Window.objects.filter(release=release))
    for window in windows:
        items = window_items(window)
        subs = (
            Submission.objects.filter(window=window, published=True, hidden_reason="", score__status=Score.Status.DONE)
            .select_related("score", "team")
            .order_by("created_at")
        )
        for sub in subs:
            sub.window = window
            scores = scores_of(sub, items)
            part = scores["overall"] or scores["shown"]
            if part is None:
                continue
            rows.append(
                {
                    "window": window.title,
                    "model": sub.model_name,
                    "team": sub.team.name if sub.team else gettext("Baseline"),
                    "baseline": sub.is_baseline,
                    "date": sub.created_at.date().isoformat(),
                    "link": sub.link,
                    "method": window.method,
                    "judge": window.judge,
                    "scored_on": "all" if scores["overall"] else "shown",
                    "score": part["value"],
                    "score_text": part["text"],
                    "n": part["n"],
                    "categories": {c["name"]: c["value"] for c in part["categories"]},
                    "validated": bool(window.judge) and window.judge in validated_judges,
                    "bundle_sha256": sub.score.scored_with.get("bundle_sha256", ""),
                }
            )
    rows.sort(key=lambda r: -(r["score"] or 0))
    return rows


# ---- the owners' own pages -----------------------------------------------------------------------


def outside_scores(release: Release):
    """The pks of the release's scores made by teams of windows that do not feed the owners'
    internal leaderboard and item analysis (baselines are the owners' own scores)."""
    return Submission.objects.filter(window__release=release, team__isnull=False, window__feeds_analysis=False).values("score_id")


# ---- researchers ----------------------------------------------------------------------------------


def window_report(window: Window) -> dict:
    """Per window, for researchers: its teams (members, submissions, spending from the usage
    ledger), and its failed submissions."""
    teams = []
    subs = list(Submission.objects.filter(window=window).select_related("score", "team"))
    by_team: dict[int | None, list[Submission]] = defaultdict(list)
    for sub in subs:
        by_team[sub.team_id].append(sub)
    for team in Team.objects.filter(window=window).prefetch_related("memberships__user"):
        mine = by_team.get(team.pk, [])
        job_ids = [s.score.job_id for s in mine if s.score.job_id]
        teams.append(
            {
                "team": team,
                "members": [m.user.username for m in team.memberships.all()],
                "submissions": len(mine),
                "usage": usage_of(job_ids) if job_ids else None,
                "estimated": sum((s.estimated_cost or 0) for s in mine),
            }
        )
    failures = [s for s in subs if s.score.status == Score.Status.FAILED]
    all_jobs = [s.score.job_id for s in subs if s.score.job_id and not s.is_baseline]
    return {
        "teams": teams,
        "submissions": subs,
        "failures": failures,
        "usage": usage_of(all_jobs) if all_jobs else None,
    }


def baseline_candidates(window: Window):
    taken = Submission.objects.filter(window=window).values_list("score_id", flat=True)
    return (
        Score.objects.filter(release=window.release, method=window.method, status=Score.Status.DONE)
        .exclude(pk__in=taken)
        .exclude(Q(pk__in=Submission.objects.values_list("score_id", flat=True)))
    )
