"""The evaluation server's pages. Teams (accounts without a platform role) see only their windows:
the rules, the release's public card and bundle, the submit form, their own submissions with
aggregate scores, publishing. Researchers open windows and read each window's report. The public
leaderboard (HTML, JSON, CSV) and the sign-up page need no login; anonymous requests are throttled."""

import io

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import PermissionDenied
from django.core.files.storage import default_storage
from django.http import FileResponse, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_POST

from benchforge import permissions, spreadsheet
from benchforge.inputs import accepts_uploads
from benchforge.markup import markdown_to_html
from benchforge.roles import RESEARCHER, role_required
from benchforge.throttling import cache_count, cache_get
from exports import card
from exports import selectors as release_selectors
from exports.models import Release, ReleaseFile

from . import selectors, services
from .forms import BaselineForm, HideForm, PublishForm, SignUpForm, SubmitForm, WindowForm

ANON_WINDOW_SECONDS = 60


def anon_rate() -> int:
    return getattr(settings, "BENCHFORGE_EVAL_ANON_PER_MINUTE", 60)


def throttled(request) -> HttpResponse | None:
    """A 429 for an anonymous address past its requests per minute (logged-in people are not counted)."""
    if request.user.is_authenticated:
        return None
    key = f"evalserver:anon:{request.META.get('REMOTE_ADDR', '')}"
    cache_count(key, ANON_WINDOW_SECONDS)
    if (cache_get(key, 0) or 0) > anon_rate():
        response = HttpResponse(
            gettext("Too many requests: try again in a minute."), status=429, content_type="text/plain; charset=utf-8"
        )
        response["Retry-After"] = str(ANON_WINDOW_SECONDS)
        return response
    return None


# ---- teams and researchers ------------------------------------------------------------------------


def home(request):
    windows = list(selectors.windows_of(request.user))
    if not windows and not permissions.is_researcher(request.user):
        raise PermissionDenied(gettext("You take part in no submission window."))
    return render(request, "evalserver/home.html", {"windows": windows})


def window(request, pk):
    found = selectors.get_window(request.user, pk)
    team = selectors.team_of(request.user, found)
    context = {"window": found, "release": found.release, "team": team}
    if team is not None:
        items = selectors.window_items(found)
        subs = list(selectors.team_submissions(team))
        for sub in subs:
            sub.window = found
        context.update(
            submissions=[(s, selectors.scores_of(s, items)) for s in subs],
            quota=selectors.quota_of(found, team),
            form=SubmitForm(),
            token=request.session.pop(f"evalserver-token-{team.pk}", None),
        )
    if permissions.is_researcher(request.user):
        report = selectors.window_report(found)
        context.update(
            report=report,
            baselines=selectors.baseline_candidates(found),
            invite_url=request.build_absolute_uri(f"/eval/{found.pk}/join/?invite={found.invite_token}"),
        )
    return render(request, "evalserver/window.html", context)


@require_POST
@accepts_uploads("data_file")
def submit(request, pk):
    found = selectors.get_window(request.user, pk)
    team = selectors.require_member(request.user, found)
    form = SubmitForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, gettext("Choose a predictions file."))
        return redirect("eval-window", pk=pk)
    sub = services.submit(
        found, user=request.user, team=team, data=form.cleaned_data["predictions"].read(), model_name=form.cleaned_data["model"]
    )
    messages.success(request, gettext("%(model)s was accepted and is being scored.") % {"model": sub.model_name})
    return redirect("eval-window", pk=pk)


@require_POST
def publish(request, pk, sub):
    found = selectors.get_window(request.user, pk)
    submission = selectors.get_submission(request.user, found, sub)
    form = PublishForm(request.POST)
    if not form.is_valid():
        messages.error(request, gettext("The link has more than 500 characters."))
        return redirect("eval-window", pk=pk)
    services.publish(submission, user=request.user, published=form.cleaned_data["published"], link=form.cleaned_data["link"])
    return redirect("eval-window", pk=pk)


@require_POST
def new_token(request, pk):
    found = selectors.get_window(request.user, pk)
    team = selectors.require_member(request.user, found)
    request.session[f"evalserver-token-{team.pk}"] = services.new_token(team, user=request.user)
    return redirect("eval-window", pk=pk)


def release_card(request, pk):
    found = selectors.get_window(request.user, pk)
    release = found.release
    html = markdown_to_html(card.dataset_card(release, "public"), links={})
    return render(request, "evalserver/card.html", {"window": found, "release": release, "card": html})


def bundle(request, pk):
    """The public bundle (never the private one), for the window's teams."""
    found = selectors.get_window(request.user, pk)
    public = release_selectors.get_file(found.release, ReleaseFile.Kind.PUBLIC_TAR)
    response = FileResponse(
        default_storage.open(public.storage_name, "rb"), as_attachment=True, filename=public.storage_name.rsplit("/", 1)[-1]
    )
    response["X-Content-SHA256"] = public.sha256
    return response


@role_required(RESEARCHER)
def new_window(request):
    releases = Release.objects.filter(status=Release.Status.FROZEN).select_related("benchmark")
    form = WindowForm(request.POST or None, releases=releases, methods=services.window_methods())
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        anchor = data["release"].scores.filter(pk=data["anchor"]).first() if data.get("anchor") else None
        created = services.open_window_from(data["release"], data, user=request.user, anchor=anchor)
        return redirect("eval-window", pk=created.pk)
    return render(request, "evalserver/new.html", {"form": form})


@require_POST
@role_required(RESEARCHER)
def close(request, pk):
    services.close_window(selectors.get_window(request.user, pk), user=request.user)
    messages.success(request, gettext("The window is closed."))
    return redirect("eval-window", pk=pk)


@require_POST
@role_required(RESEARCHER)
def hide(request, pk, sub):
    found = selectors.get_window(request.user, pk)
    submission = selectors.get_submission(request.user, found, sub)
    form = HideForm(request.POST)
    reason = form.cleaned_data["reason"] if form.is_valid() else ""
    if request.POST.get("show") == "1":
        services.unhide(submission, user=request.user)
    else:
        services.hide(submission, user=request.user, reason=reason)
    return redirect("eval-window", pk=pk)


@require_POST
@role_required(RESEARCHER)
def baseline(request, pk):
    found = selectors.get_window(request.user, pk)
    form = BaselineForm(request.POST)
    if not form.is_valid():
        messages.error(request, gettext("Choose a score of this release."))
        return redirect("eval-window", pk=pk)
    score = selectors.baseline_candidates(found).filter(pk=form.cleaned_data["score"]).first()
    if score is None:
        messages.error(request, gettext("Choose a score of this release."))
        return redirect("eval-window", pk=pk)
    services.add_baseline(
        found, user=request.user, score=score, model_name=form.cleaned_data["model"], link=form.cleaned_data["link"]
    )
    return redirect("eval-window", pk=pk)


# ---- without login --------------------------------------------------------------------------------


@login_not_required
def join(request, pk):
    """Sign up (anonymous) or join (logged in) through the invitation link or open registration."""
    refused = throttled(request)
    if refused:
        return refused
    found = selectors.get_window_for_signup(pk)
    invite = request.POST.get("invite") or request.GET.get("invite") or ""
    if not services.may_register(found, invite):
        raise PermissionDenied(gettext("This window takes teams by invitation: use the invitation link you were sent."))
    form = SignUpForm(request.POST or None, initial={"invite": invite})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        if request.user.is_authenticated:
            if data["join_code"]:
                services.join_team(found, user=request.user, join_code=data["join_code"])
            else:
                team, token = services.create_team(found, user=request.user, name=data["team_name"], invite=invite)
                request.session[f"evalserver-token-{team.pk}"] = token
        else:
            user, team, token = services.sign_up(
                found,
                username=data["username"],
                password=data["password"],
                invite=invite,
                team_name=data["team_name"],
                join_code=data["join_code"],
            )
            login(request, user, backend="benchforge.roles.RoleModelBackend")
            if token:
                request.session[f"evalserver-token-{team.pk}"] = token
        return redirect("eval-window", pk=found.pk)
    return render(request, "evalserver/join.html", {"window": found, "form": form, "invite": invite})


@login_not_required
def public_board(request, slug, version, fmt="html"):
    refused = throttled(request)
    if refused:
        return refused
    release = selectors.public_release(slug, version)
    rows = selectors.public_entries(release)
    categories = sorted({name for row in rows for name in row["categories"]})
    if fmt == "json":
        return JsonResponse(
            {"benchmark": release.benchmark.slug, "version": release.version, "entries": rows},
            json_dumps_params={"ensure_ascii": False},
        )
    if fmt == "csv":
        out = io.StringIO()
        writer = spreadsheet.writer(out)
        head = [
            "model",
            "team",
            "baseline",
            "date",
            "link",
            "method",
            "judge",
            "scored_on",
            "score",
            "n",
            "validated",
            "bundle_sha256",
        ]
        writer.writerow(head + categories)
        for row in rows:
            writer.writerow([row[k] for k in head] + [row["categories"].get(c, "") for c in categories])
        response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{release.benchmark.slug}-{release.version}-leaderboard.csv"'
        return response
    return render(
        request,
        "evalserver/public.html",
        {"release": release, "rows": [(r, [r["categories"].get(c) for c in categories]) for r in rows], "categories": categories},
    )
