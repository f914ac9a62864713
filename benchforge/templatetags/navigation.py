"""{% site_header %}: the header every page shows (top bar, benchmark bar, stage bar), and
{% benchmark_nav as nav %} / {% global_places as places %}: its data (benchforge.navigation).

The header is built here as one string, not by the template engine: with its loops over stages,
links and languages it cost every page more CPU than most pages' own content (docs/web-costs.md).
Every value that comes from data is escaped."""

from functools import lru_cache
from html import escape as _escape

from django import template
from django.conf import settings
from django.utils.safestring import mark_safe
from django.utils.translation import get_language, get_language_info, gettext

from benchforge import navigation
from benchforge.navigation import reverse_once
from benchforge.roles import user_role

register = template.Library()


@register.simple_tag(takes_context=True)
def benchmark_nav(context):
    request, benchmark = context.get("request"), context.get("benchmark")
    if request is None or benchmark is None or not getattr(request.user, "is_authenticated", False):
        return None
    return navigation.benchmark_navigation(request, benchmark)


@register.simple_tag(takes_context=True)
def global_places(context):
    request = context.get("request")
    if request is None or not getattr(request.user, "is_authenticated", False):
        return []
    return navigation.global_places(request)


@lru_cache(maxsize=8)
def _languages() -> tuple[tuple[str, str], ...]:
    return tuple((code, get_language_info(code)["name_local"]) for code, _name in settings.LANGUAGES)


def escape(value) -> str:
    """html.escape of the value as text (Django's escape wraps every call for lazy strings: slower)."""
    return _escape(str(value))


def _current(flag) -> str:
    return ' aria-current="page"' if flag else ""


def _list(entries) -> str:
    return "".join(f'<li><a href="{escape(e["url"])}"{_current(e["current"])}>{escape(e["label"])}</a></li>' for e in entries)


# Where the kept header takes this request's CSRF field and address (the language switch's "next").
_CSRF_FIELD, _NEXT = "\x00csrf-field\x00", "\x00next\x00"


def _csrf_field(context) -> str:
    token = str(context.get("csrf_token") or "")
    return f'<input type="hidden" name="csrfmiddlewaretoken" value="{escape(token)}">' if token not in ("", "NOTPROVIDED") else ""


def _count_mark(key: str) -> str:
    """Where the kept header takes a stage's count."""
    return f"\x00count:{key}\x00"


def _count(stage: navigation.Stage, n) -> str:
    """A stage's count as the header shows it (nothing when nothing waits)."""
    if not n:
        return ""
    one, several = stage.waiting_text
    text = escape((one if n == 1 else several) % {"n": n})
    return f'<span class="count" title="{text}"><span aria-hidden="true">{n}</span><span class="vh">: {text}</span></span>'


@register.simple_tag(takes_context=True)
def site_header(context):
    """Inside a benchmark the header is kept per member, role, language and page name, without its
    counts, until the benchmark's setup changes (navigation.kept_together, SETUP: a team's
    submits and verdicts change the counts all day, and rebuilding the header after each had been a
    third of a page's CPU). This request's counts (kept until the work changes), CSRF field and
    address are put in. Elsewhere the header is built for the request."""
    request, user, benchmark = context.get("request"), context.get("user"), context.get("benchmark")
    if request is None or user is None or not user.is_authenticated or benchmark is None:
        return mark_safe(_header(context, _csrf_field(context), escape(request.get_full_path() if request else "")))  # noqa: S308
    match = getattr(request, "resolver_match", None)
    url_name = (match.url_name or "") if match else ""
    # The page's name settles which link is current: every header link takes the slug alone, so a page
    # with more in its address (an item's) is no link's, and a named page has one address per benchmark.
    key = f"header:{user.pk}:{user_role(user)}:{get_language()}:{url_name}"
    stages = navigation.visible_stages(user)
    # One cache read for both; the counts first, so that building the header finds them kept.
    counts, kept = navigation.kept_together(
        benchmark.pk,
        [
            navigation.kept_counts(user, benchmark, stages),
            navigation.Keep(key, lambda: _header(context, _CSRF_FIELD, _NEXT, counts=False), on=navigation.SETUP),
        ],
        consequence="the header is built afresh",
    )
    for stage in stages:
        kept = kept.replace(_count_mark(stage.key), _count(stage, counts.get(stage.key)))
    return mark_safe(kept.replace(_CSRF_FIELD, _csrf_field(context)).replace(_NEXT, escape(request.get_full_path())))  # noqa: S308


def _header(context, csrf: str, next_path: str, *, counts: bool = True) -> str:
    """The header's HTML; without `counts`, with a mark where each stage's count goes (_count_mark)."""
    user = context.get("user")
    out = ['<header class="site-header" id="site-header">\n  <div class="topbar">\n']
    out.append(f'    <a class="brand" href="{escape(reverse_once("home"))}">benchforge</a>\n    ')
    # (Translated outside the f-strings below, where makemessages would not find them.)
    menu, places_label, log_out = escape(gettext("Menu")), escape(gettext("Places")), escape(gettext("Log out"))
    password_title = escape(gettext("Change your password"))
    pipeline, tools = escape(gettext("Pipeline")), escape(gettext("Benchmark tools"))
    nav = None
    if user is not None and user.is_authenticated:
        nav = benchmark_nav(context)
        places = global_places(context)
        if nav:
            out.append(f'\n    <span class="topbar-here" aria-hidden="true">{escape(nav["benchmark"].name)}</span>')
        controls = "site-menu bench-menu" if nav else "site-menu"
        out.append(
            f'\n    <button type="button" class="menu-toggle" id="menu-toggle" aria-expanded="false" aria-controls="{controls}">'
            f"{menu}</button>\n"
            '    <div class="site-menu collapsible" id="site-menu">\n'
            f'      <nav class="places" aria-label="{places_label}">\n        <ul>'
        )
        out.extend(
            f'<li><a href="{escape(p["url"])}" id="{escape(p["id"])}"{_current(p["current"])}>{escape(p["label"])}</a></li>'
            for p in places
        )
        role = context.get("user_role")
        language = get_language()
        switch = "".join(
            f'<button type="submit" class="link" name="language" value="{code}" lang="{code}">{escape(name)}</button>'
            for code, name in _languages()
            if code != language
        )
        out.append(
            "</ul>\n      </nav>\n"
            '      <div class="account">\n'
            f'        <a href="{escape(reverse_once("password-change"))}" class="user" id="password-link" '
            f'title="{password_title}">{escape(user.username)}</a>\n'
            f'        <span class="role role-{escape(role or "none")}">{escape(context.get("user_role_label") or "")}</span>\n'
            f'        <form method="post" action="{escape(reverse_once("logout"))}" class="inline">{csrf}'
            f'<button type="submit" class="link">{log_out}</button></form>\n'
            f'        <form method="post" action="{escape(reverse_once("set-language"))}" class="inline" id="language-switch">{csrf}'
            f'<input type="hidden" name="next" value="{next_path}">{switch}</form>\n'
            "      </div>\n    </div>\n    "
        )
    out.append("\n  </div>\n  ")
    if nav:
        benchmark = nav["benchmark"]
        name = escape(benchmark.name)
        overview = escape(gettext("%(name)s: overview") % {"name": benchmark.name})
        out.append(
            '\n  <div class="benchbar collapsible" id="bench-menu">\n'
            f'    <a class="bench-name" href="{escape(reverse_once("dashboard", benchmark.slug))}" title="{overview}"'
            f"{_current(nav['on_dashboard'])}>{name}</a>\n"
            f'    <nav class="pipeline" aria-label="{pipeline}">\n      <ol>'
        )
        for stage in nav["stages"]:
            count = _count(stage["stage"], stage["waiting"]) if counts else _count_mark(stage["key"])
            current = ' aria-current="true"' if stage["current"] else ""
            out.append(
                f'<li><a href="{escape(stage["url"])}" class="stage" data-stage="{escape(stage["key"])}"{current}>'
                f"{escape(stage['label'])}{count}</a></li>"
            )
        out.append(
            "</ol>\n    </nav>\n"
            f'    <nav class="tools" aria-label="{tools}">\n'
            f"      <ul>{_list(nav['tools'])}</ul>\n    </nav>\n  </div>\n  "
        )
        if nav["current"]:
            label = escape(gettext("%(stage)s pages") % {"stage": nav["current"]["label"]})
            out.append(
                f'\n  <nav class="stagebar" aria-label="{label}">\n    <ul>{_list(nav["current"]["links"])}</ul>\n  </nav>\n  '
            )
        out.append("\n  ")
    out.append("\n</header>")
    return "".join(out)  # every value from data is escaped above
