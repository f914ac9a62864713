"""Every write of the evaluation server: opening a window, teams and their members, submitting,
publishing, baselines and hiding. Submitting checks the file first (nothing is stored from a
refused one), then decides quota and cost under the team's row lock."""

import hashlib
import random
from datetime import timedelta
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext

from benchforge import permissions
from benchforge.concurrency import create_unique, lock
from benchforge.errors import AlreadyExists, Conflict, DomainError, NotAllowed
from benchforge_harness import scoring
from exports import leaderboard
from exports.models import Release, Score

from . import checking, selectors
from .models import Membership, Submission, Team, Window, digest, new_secret

MAX_HIDDEN_FRACTION = 0.9


class QuotaExceeded(DomainError):
    status = 429
    code = "quota"


def window_methods() -> list[str]:
    """The leaderboard's methods that score uploaded answers (CircularEval asks the model itself)."""
    return [name for name in Score.Method.values if scoring.MODES[name].takes("answers")]


# ---- windows --------------------------------------------------------------------------------------


def open_window(
    release: Release,
    *,
    user,
    title: str,
    method: str,
    opens_at,
    closes_at,
    split: str = Window.Split.TEST,
    judge: str = "",
    anchor: Score | None = None,
    daily_limit: int = 3,
    total_limit: int = 30,
    cost_cap_submission: Decimal | None = None,
    cost_cap_team: Decimal | None = None,
    hidden_fraction: float = 0.0,
    split_seed: int = 0,
    registration: str = Window.Registration.INVITE,
    feeds_analysis: bool = False,
) -> Window:
    permissions.require_researcher(user, gettext("Opening a submission window"))
    if not release.is_frozen:
        raise Conflict(
            gettext("Release %(version)s is not frozen: only a frozen release takes submissions.") % {"version": release.version}
        )
    title = (title or "").strip()
    if not title:
        raise DomainError(gettext("Give the window a title."))
    if method not in window_methods():
        raise DomainError(
            gettext("Windows score uploaded answers: choose the method among %(methods)s.")
            % {"methods": ", ".join(window_methods())}
        )
    mode = scoring.MODES[method]
    if mode.takes("judge") and not judge:
        raise DomainError(gettext("Name the judge endpoint the release's rules are scored with."))
    if mode.takes("anchor"):
        leaderboard.check_anchor(release, anchor)
    _check_window_terms(
        split, registration, opens_at, closes_at, daily_limit, total_limit, hidden_fraction, (cost_cap_submission, cost_cap_team)
    )
    leaderboard.check_endpoints_now([judge])
    items = [item for item in leaderboard.scoring_release(release).items if item.split == split and mode.scores(item)]
    if not items:
        raise DomainError(
            gettext("The %(split)s split of release %(version)s has no item this method scores.")
            % {"split": split, "version": release.version}
        )
    if cost_cap_submission is not None or cost_cap_team is not None:
        estimated = leaderboard.estimate(items, mode, endpoint="", judge=judge, answers={})
        if estimated["cost"] is None:
            raise DomainError(gettext("A cost cap needs the judge endpoint's prices: declare them, or leave the caps empty."))
    ids = [item.id for item in items]
    return Window.objects.create(
        release=release,
        title=title,
        split=split,
        method=method,
        judge=judge,
        anchor=anchor,
        opens_at=opens_at,
        closes_at=closes_at,
        daily_limit=daily_limit,
        total_limit=total_limit,
        cost_cap_submission=cost_cap_submission,
        cost_cap_team=cost_cap_team,
        hidden_fraction=hidden_fraction,
        split_seed=split_seed,
        items=ids,
        shown_items=shown_part(items, hidden_fraction, split_seed),
        registration=registration,
        feeds_analysis=bool(feeds_analysis),
        created_by=user,
    )


# The terms a window opens with that the page's form and the API's serializer both validate under
# these names: one mapping, so a new term reaches both.
WINDOW_TERMS = (
    *("title", "split", "method", "closes_at", "daily_limit", "total_limit", "cost_cap_submission", "cost_cap_team"),
    *("hidden_fraction", "split_seed", "registration", "feeds_analysis"),
)


def open_window_from(release: Release, data: dict, *, user, anchor) -> Window:
    """open_window with a form's or a serializer's validated fields (opening now when no start is given)."""
    terms = {name: data[name] for name in WINDOW_TERMS}
    return open_window(
        release, user=user, anchor=anchor, judge=data["judge"].strip(), opens_at=data.get("opens_at") or timezone.now(), **terms
    )


def close_window(window: Window, *, user) -> Window:
    """Close a window now: submissions stop, and a hidden part's score is revealed to its teams."""
    permissions.require_researcher(user, gettext("Closing a submission window"))
    with transaction.atomic():
        row = lock(Window, window.pk)
        now = timezone.now()
        if row.closes_at <= now:
            raise Conflict(gettext("The window closed at %(at)s UTC already.") % {"at": row.closes_at.strftime("%Y-%m-%d %H:%M")})
        Window.objects.filter(pk=row.pk).update(closes_at=now, opens_at=min(row.opens_at, now))
    return Window.objects.select_related("release__benchmark").get(pk=window.pk)


def _check_window_terms(split, registration, opens_at, closes_at, daily_limit, total_limit, hidden_fraction, caps) -> None:
    """The window's split, registration, dates, quotas, hidden share and cost caps make sense."""
    if split not in Window.Split.values:
        raise DomainError(gettext("Choose the test or the dev split."))
    if registration not in Window.Registration.values:
        raise DomainError(gettext("Choose invitation or open registration."))
    if closes_at <= opens_at:
        raise DomainError(gettext("The window must close after it opens."))
    if daily_limit < 1 or total_limit < daily_limit:
        raise DomainError(gettext("The daily limit must be at least 1 and the total limit at least the daily one."))
    if not 0 <= hidden_fraction <= MAX_HIDDEN_FRACTION:
        raise DomainError(gettext("The hidden part is a share between 0 and %(max)s.") % {"max": MAX_HIDDEN_FRACTION})
    for cap in caps:
        if cap is not None and cap <= 0:
            raise DomainError(gettext("A cost cap must be more than 0 (leave it empty for none)."))


def shown_part(items, hidden_fraction: float, seed: int) -> list[str]:
    """The ids whose score a team sees while the window is open: whole seed groups (an item and its
    rewrites stay on one side), shuffled with `seed`, until the hidden share is reached."""
    if hidden_fraction <= 0:
        return [item.id for item in items]
    groups: dict[str, list[str]] = {}
    for item in items:
        groups.setdefault(item.seed_id or item.id, []).append(item.id)
    order = sorted(groups)
    random.Random(seed).shuffle(order)
    hidden_target = round(hidden_fraction * len(items))
    hidden: set[str] = set()
    for key in order:
        if len(hidden) >= hidden_target:
            break
        hidden.update(groups[key])
    return [item.id for item in items if item.id not in hidden]


# ---- teams ----------------------------------------------------------------------------------------


def may_register(window: Window, invite: str) -> bool:
    return window.registration == Window.Registration.OPEN or (bool(invite) and invite == window.invite_token)


def create_team(window: Window, *, user, name: str, invite: str = "") -> tuple[Team, str]:
    """A new team with `user` as its first member; (team, its API token, shown once)."""
    if not may_register(window, invite):
        raise NotAllowed(gettext("This window takes teams by invitation: use the invitation link you were sent."))
    if window.is_closed:
        raise Conflict(gettext("The window is closed."))
    name = (name or "").strip()
    if not name or len(name) > 80:
        raise DomainError(gettext("Name your team (up to 80 characters)."))
    token = new_secret()
    with transaction.atomic():
        if Membership.objects.filter(window=window, user=user).exists():
            raise Conflict(gettext("You are already in a team of this window."))
        team, created = create_unique(
            lambda: Team.objects.create(window=window, name=name, token_hash=digest(token), created_by=user),
            lambda: Team.objects.filter(window=window, name=name).first(),
        )
        if not created:
            raise AlreadyExists(
                gettext("A team named %(name)s exists in this window.") % {"name": name}, extra={"existing": {"name": name}}
            )
        _add_member(window, team, user)
    return team, token


def join_team(window: Window, *, user, join_code: str) -> Team:
    team = Team.objects.filter(window=window, join_code=join_code).first() if join_code else None
    if team is None:
        raise DomainError(gettext("No team of this window has that join code."))
    existing = Membership.objects.filter(window=window, user=user).first()
    if existing is not None:
        if existing.team_id == team.pk:
            return team
        raise Conflict(gettext("You are already in a team of this window."))
    with transaction.atomic():
        _add_member(window, team, user)
    return team


def _add_member(window, team, user) -> None:
    try:
        with transaction.atomic():
            Membership.objects.create(window=window, team=team, user=user)
    except IntegrityError:
        raise Conflict(gettext("You are already in a team of this window.")) from None


def sign_up(window: Window, *, username: str, password: str, invite: str, team_name: str = "", join_code: str = ""):
    """A new account (no role inside the platform: it sees only its windows) and its team; (user,
    team, token or None when it joined a team that has one)."""
    if not may_register(window, invite):
        raise NotAllowed(gettext("This window takes teams by invitation: use the invitation link you were sent."))
    username = (username or "").strip()
    if not username or len(username) > 150 or not username.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise DomainError(gettext("Choose a username of letters, digits, '-', '_' or '.'."))
    User = get_user_model()
    if not team_name.strip() and not join_code:
        raise DomainError(gettext("Name a new team, or give the join code of your team."))
    with transaction.atomic():
        user, created = create_unique(
            lambda: User.objects.create_user(username=username),
            lambda: User.objects.filter(username=username).first(),
        )
        if not created:
            raise AlreadyExists(gettext("That username is taken."))
        try:
            validate_password(password, user)
        except ValidationError as exc:
            raise DomainError(" ".join(exc.messages)) from None
        user.set_password(password)
        user.save(update_fields=["password"])
        if join_code:
            return user, join_team(window, user=user, join_code=join_code), None
        team, token = create_team(window, user=user, name=team_name, invite=invite)
        return user, team, token


def new_token(team: Team, *, user) -> str:
    """A new API token for the team (the old one stops working); shown once."""
    selectors.require_member(user, team.window)
    token = new_secret()
    Team.objects.filter(pk=team.pk).update(token_hash=digest(token))
    return token


# ---- submitting -----------------------------------------------------------------------------------


def submit(window: Window, *, user, team: Team, data: bytes, model_name: str = "", release_name: str = "") -> Submission:
    """Check the file (refused whole, nothing stored), then, under the team's lock, the window's
    dates, the daily and total limits and the cost caps, and score it as a leaderboard job."""
    if team.window_id != window.pk:
        raise NotAllowed(gettext("That team does not belong to this window."))
    release = window.release
    if release_name and release_name != f"{release.benchmark.slug} {release.version}":
        raise Conflict(
            gettext("The predictions are for %(theirs)s; this window scores %(ours)s.")
            % {"theirs": release_name, "ours": f"{release.benchmark.slug} {release.version}"}
        )
    _check_dates(window)
    model_name = (model_name or "").strip()
    if len(model_name) > 100:
        raise DomainError(gettext("The model's name has more than 100 characters."))
    scored = leaderboard.scoring_release(release)
    wanted = set(window.items)
    other = {item.id for item in scored.items if item.id not in wanted}
    scored.items = [item for item in scored.items if item.id in wanted]
    scored.__dict__.pop("_by_id", None)
    answers, name = checking.check(data, scored, window_ids=window.items, other_split=other, model=model_name or None)
    name = (model_name or name or "").strip()[:100]
    if not name:
        raise DomainError(gettext("Name the model (a 'model' in the file, or the model name field)."))
    mode = scoring.MODES[window.method]
    estimated = leaderboard.estimate(scored.items, mode, endpoint="", judge=window.judge, answers=answers)
    cost = Decimal(str(estimated["cost"])) if estimated["cost"] is not None else None
    now = timezone.now()
    with transaction.atomic():
        lock(Team, team.pk)  # every submit of this team waits here: the counts below are final
        window = Window.objects.get(pk=window.pk)
        _check_dates(window)
        counted = Submission.objects.filter(team_id=team.pk).exclude(score__status=Score.Status.FAILED)
        day_start = now.replace(hour=0, minute=0, second=0, microsecond=0)
        today = counted.filter(created_at__gte=day_start).count()
        if today >= window.daily_limit:
            raise QuotaExceeded(
                gettext(
                    "Your team has used its %(limit)s submissions for today (UTC); the next one can be made after %(at)s UTC."
                )
                % {"limit": window.daily_limit, "at": (day_start + timedelta(days=1)).strftime("%Y-%m-%d %H:%M")},
                extra={"limit": "daily"},
            )
        if counted.count() >= window.total_limit:
            raise QuotaExceeded(
                gettext("Your team has used all %(limit)s submissions of this window.") % {"limit": window.total_limit},
                extra={"limit": "total"},
            )
        _check_cost(window, counted, cost)
        score = leaderboard.submit_answers(
            release,
            user=user,
            label=name,
            method=window.method,
            answers=answers,
            judge=window.judge,
            anchor=window.anchor,
            keys=window.items,
            estimated=estimated,
        )
        return Submission.objects.create(
            window=window,
            team=team,
            submitted_by=user,
            model_name=name,
            score=score,
            sha256=hashlib.sha256(data).hexdigest(),
            size=len(data),
            estimated_cost=cost,
            created_at=now,
        )


def _check_dates(window: Window) -> None:
    now = timezone.now()
    if now < window.opens_at:
        raise Conflict(gettext("The window opens at %(at)s UTC.") % {"at": window.opens_at.strftime("%Y-%m-%d %H:%M")})
    if now >= window.closes_at:
        raise Conflict(gettext("The window closed at %(at)s UTC.") % {"at": window.closes_at.strftime("%Y-%m-%d %H:%M")})


def _check_cost(window: Window, counted, cost: Decimal | None) -> None:
    if window.cost_cap_submission is None and window.cost_cap_team is None:
        return
    if cost is None:
        raise DomainError(gettext("The judge's prices are unknown, so the window's cost cap cannot be checked."))
    if window.cost_cap_submission is not None and cost > window.cost_cap_submission:
        raise QuotaExceeded(
            gettext("Scoring this file is estimated at %(cost)s, more than the cap of %(cap)s per submission.")
            % {"cost": cost, "cap": window.cost_cap_submission},
            extra={"limit": "cost_submission"},
        )
    if window.cost_cap_team is not None:
        spent = sum((c for c in counted.values_list("estimated_cost", flat=True) if c is not None), Decimal(0))
        if spent + cost > window.cost_cap_team:
            raise QuotaExceeded(
                gettext("Scoring this file (estimated %(cost)s) would take your team past its cap of %(cap)s (%(spent)s used).")
                % {"cost": cost, "cap": window.cost_cap_team, "spent": spent},
                extra={"limit": "cost_team"},
            )


# ---- publishing -----------------------------------------------------------------------------------


def publish(submission: Submission, *, user, published: bool, link: str = "") -> Submission:
    """A team member puts a finished submission on the public leaderboard (or takes it off)."""
    selectors.require_member(user, submission.window, team=submission.team)
    link = (link or "").strip()
    if link and not link.startswith(("https://", "http://")):
        raise DomainError(gettext("The link must be an http(s) address of the paper or code."))
    if len(link) > 500:
        raise DomainError(gettext("The link has more than 500 characters."))
    with transaction.atomic():
        row = lock(Submission, submission.pk)
        if published and Score.objects.get(pk=row.score_id).status != Score.Status.DONE:
            raise Conflict(gettext("Only a scored submission can be published."))
        Submission.objects.filter(pk=row.pk).update(published=published, link=link or row.link)
    return Submission.objects.get(pk=submission.pk)


def add_baseline(window: Window, *, user, score: Score, model_name: str = "", link: str = "") -> Submission:
    """A researcher puts a finished score of the release on the window's board as a baseline."""
    permissions.require_researcher(user, gettext("Adding a baseline"))
    if score.release_id != window.release_id or score.status != Score.Status.DONE:
        raise DomainError(gettext("A baseline is a finished score of this window's release."))
    if score.method != window.method:
        raise DomainError(gettext("A baseline is scored with the window's method."))
    if Submission.objects.filter(score=score).exists():
        raise AlreadyExists(gettext("That score is on the board already."))
    return Submission.objects.create(
        window=window,
        team=None,
        submitted_by=user,
        model_name=(model_name or score.label).strip()[:100],
        score=score,
        is_baseline=True,
        published=True,
        link=(link or "").strip()[:500],
    )


def hide(submission: Submission, *, user, reason: str) -> Submission:
    """A researcher takes an entry off the public board, saying why (the team sees the reason)."""
    permissions.require_researcher(user, gettext("Hiding an entry"))
    reason = (reason or "").strip()
    if not reason:
        raise DomainError(gettext("Say why the entry is hidden."))
    Submission.objects.filter(pk=submission.pk).update(hidden_reason=reason[:500])
    return Submission.objects.get(pk=submission.pk)


def unhide(submission: Submission, *, user) -> Submission:
    permissions.require_researcher(user, gettext("Showing an entry again"))
    Submission.objects.filter(pk=submission.pk).update(hidden_reason="")
    return Submission.objects.get(pk=submission.pk)
