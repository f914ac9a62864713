"""The navigation inside a benchmark: the pipeline's stages in order, each with what waits there
for the person looking, and the pages of each stage. Adding a stage (human evaluation) is one
more entry in STAGES.

The project package imports no app, so a stage names the selector that counts its waiting work
by dotted path, the way the root URLconf names the apps' URL modules. That selector takes
(user, benchmark) and returns a queryset of what waits for that user, a tuple of querysets whose
counts add up, or None when nothing in the stage waits for someone of that role. It builds
querysets only: every stage is counted in one database query (`waiting_counts`), so a page
costs the same whatever the size of the benchmark.
"""

from dataclasses import dataclass, field
from functools import cache

from django.db.models import IntegerField, Subquery
from django.urls import reverse
from django.utils.module_loading import import_string
from django.utils.translation import gettext_lazy as _

from .roles import ANNOTATOR, RESEARCHER, REVIEWER, has_role, user_role

# The benchmark a page is inside, by its slug, as the user may see it (None otherwise). The app that
# owns benchmarks registers the function (curation.apps): the project package imports no app, and a
# registration keeps the dependency pointing down, where import-linter sees it.
_benchmark_finder = None


def register_benchmark_finder(find) -> None:
    """`find(user, slug)` returns the benchmark of that slug the user may see, or None."""
    global _benchmark_finder
    _benchmark_finder = find


def find_benchmark(user, slug: str):
    return _benchmark_finder(user, slug) if _benchmark_finder is not None else None


@dataclass(frozen=True)
class Link:
    """A page of a stage. `url_name` takes the benchmark's slug unless `global_page`; then
    `from_benchmark` adds ?from=<slug> (or ?benchmark=<slug>) so that page keeps the benchmark's navigation."""

    label: str
    url_name: str
    role: str = ANNOTATOR  # the least role that may open it
    global_page: bool = False
    from_benchmark: str = ""

    def url(self, benchmark) -> str:
        if not self.global_page:
            return reverse(self.url_name, args=[benchmark.slug])
        url = reverse(self.url_name)
        return f"{url}?{self.from_benchmark}={benchmark.slug}" if self.from_benchmark else url


@dataclass(frozen=True)
class Stage:
    key: str
    label: str
    links: tuple[Link, ...]
    role: str = ANNOTATOR  # the least role that sees the stage
    # Dotted path of the selector of what waits here for a user (see the module's docstring),
    # and how to say how many: (one, several), each with %(n)s.
    waiting: str = ""
    waiting_text: tuple[str, str] = ("", "")
    # Where the stage's tab leads for a role, when not to its first page that role may open.
    start: dict[str, str] = field(default_factory=dict)
    # URL names of the pages that belong to the stage (prefixes), so its tab shows as current.
    pages: tuple[str, ...] = ()


STAGES: tuple[Stage, ...] = (
    Stage(
        "collect",
        _("Collect"),
        links=(
            Link(_("Images"), "image-grid"),
            Link(_("Upload"), "image-upload"),
            Link(_("Near duplicates"), "near-duplicates"),
            Link(_("Contamination"), "contamination"),
            Link(_("Taxonomy"), "taxonomy"),
            Link(_("Known sets"), "known-sets", role=RESEARCHER, global_page=True, from_benchmark="from"),
        ),
        waiting="curation.selectors.images_to_screen",
        waiting_text=(_("%(n)s image waits for screening"), _("%(n)s images wait for screening")),
        pages=("image-", "near-duplicate", "contamination", "taxonomy", "task-edit", "preset-load", "known-set"),
    ),
    Stage(
        "author",
        _("Author"),
        links=(
            Link(_("Items"), "item-list"),
            Link(_("My queue"), "queue"),
            Link(_("New item"), "item-new"),
            Link(_("Assign"), "assign", role=RESEARCHER),
            Link(_("Import"), "item-import", role=RESEARCHER),
        ),
        waiting="annotation.selectors.open_assignments",
        waiting_text=(_("%(n)s assignment waits in your queue"), _("%(n)s assignments wait in your queue")),
        start={ANNOTATOR: "queue"},  # an annotator's work starts from their queue
        pages=("item-", "queue", "assign"),
    ),
    Stage(
        "review",
        _("Review"),
        role=REVIEWER,
        links=(Link(_("My reviews"), "review-queue"), Link(_("Rounds"), "review-home")),
        waiting="review.selectors.waiting_for",
        waiting_text=(_("%(n)s review or item waits for you"), _("%(n)s reviews or items wait for you")),
        start={RESEARCHER: "review-home"},
        pages=("review-",),
    ),
    Stage(
        "rewrite",
        _("Rewrite"),
        role=REVIEWER,
        links=(
            Link(_("Batches"), "rewrite-home"),
            Link(_("Verify"), "rewrite-next"),
            Link(_("Prompt templates"), "rewrite-templates"),
        ),
        waiting="rewrite.selectors.waiting_for",
        waiting_text=(_("%(n)s seed has rewrites to verify"), _("%(n)s seeds have rewrites to verify")),
        pages=("rewrite-",),
    ),
    Stage(
        "qc",
        _("QC"),
        role=RESEARCHER,
        links=(Link(_("Runs"), "qc-home"), Link(_("Import a benchmark"), "qc-import", global_page=True)),
        waiting="qc.selectors.waiting_for",
        waiting_text=(_("%(n)s flagged item waits for a decision"), _("%(n)s flagged items wait for a decision")),
        pages=("qc-",),
    ),
    Stage(
        "release",
        _("Release"),
        links=(Link(_("Releases"), "release-list"),),
        waiting="exports.selectors.waiting_for",
        waiting_text=(_("%(n)s item is ready for a release"), _("%(n)s items are ready for a release")),
        pages=("release-",),
    ),
    Stage(
        "humaneval",
        _("Human evaluation"),
        links=(Link(_("Studies"), "humaneval-home"), Link(_("Plan a study"), "humaneval-plan", role=RESEARCHER)),
        waiting="humaneval.selectors.waiting_for",
        waiting_text=(_("%(n)s answer waits for your rating"), _("%(n)s answers wait for your rating")),
        pages=("humaneval-",),
    ),
)

# Whose work starts where: the stage listed first among "what waits for you" on the dashboard.
FIRST_STAGE = {ANNOTATOR: "author", REVIEWER: "review"}

# Pages of the benchmark that belong to no stage, after the stages.
BENCHMARK_TOOLS: tuple[Link, ...] = (
    Link(_("Jobs"), "job-list", global_page=True, from_benchmark="benchmark"),
    Link(_("Label Studio"), "labelstudio", role=RESEARCHER),
    Link(_("Settings"), "benchmark-settings", role=RESEARCHER),
)

# The places outside any benchmark, in the top bar.
GLOBAL_PLACES: tuple[Link, ...] = (
    Link(_("Benchmarks"), "home", global_page=True),
    Link(_("All jobs"), "job-list", global_page=True),
    Link(_("API docs"), "api-docs", global_page=True),
    Link(_("Locked logins"), "lockouts", role=RESEARCHER, global_page=True),
)


class CountOf(Subquery):
    """COUNT(*) of a queryset, as a scalar subquery (so many counts share one query)."""

    template = "(SELECT COUNT(*) FROM (%(subquery)s) AS counted)"
    output_field = IntegerField()


@cache
def _selector(path: str):
    return import_string(path)


def waiting_counts(user, benchmark, stages=STAGES) -> dict[str, int | None]:
    """{stage key: how many things wait there for `user`} (None: nothing can wait there for
    their role), all counted in one query."""
    parts, counts = {}, {}
    for stage in stages:
        found = _selector(stage.waiting)(user, benchmark) if stage.waiting else None
        if found is None:
            counts[stage.key] = None
            continue
        for n, queryset in enumerate(found if isinstance(found, tuple) else (found,)):
            parts[f"{stage.key}__{n}"] = CountOf(queryset.order_by().values("pk"))
    if parts:
        row = type(benchmark).objects.filter(pk=benchmark.pk).values(**parts).get()
        for name, n in row.items():
            key = name.split("__")[0]
            counts[key] = (counts.get(key) or 0) + n
    return counts


def _links(links, user, benchmark, path: str) -> list[dict]:
    """The links `user` may follow, each marked current when it is the page at `path`."""
    shown = []
    for link in links:
        if has_role(user, link.role):
            url = link.url(benchmark)
            shown.append({"label": link.label, "url": url, "current": url.split("?")[0] == path})
    return shown


def _current_stage(url_name: str) -> str:
    for stage in STAGES:
        if any(url_name.startswith(prefix) for prefix in stage.pages):
            return stage.key
    return ""


def benchmark_navigation(request, benchmark) -> dict:
    """What the benchmark bar shows `request.user`: the stages their role sees, each with its
    link, what waits there and whether the page is in it; the current stage's pages; the
    benchmark's tools. Computed once per request."""
    cached = getattr(request, "_benchforge_nav", None)
    if cached is not None and cached["benchmark"] == benchmark:
        return cached
    user = request.user
    role = user_role(user)
    match = getattr(request, "resolver_match", None)
    url_name = (match.url_name or "") if match else ""
    current = _current_stage(url_name)
    visible = [s for s in STAGES if has_role(user, s.role)]
    counts = waiting_counts(user, benchmark, visible)
    stages = []
    for stage in visible:
        links = _links(stage.links, user, benchmark, request.path)
        start = stage.start.get(role)
        url = reverse(start, args=[benchmark.slug]) if start else links[0]["url"]
        n = counts.get(stage.key)
        one, several = stage.waiting_text
        stages.append(
            {
                "key": stage.key,
                "label": stage.label,
                "url": url,
                "waiting": n,
                "waiting_text": (one if n == 1 else several) % {"n": n} if n else "",
                "current": stage.key == current,
                "links": links,
            }
        )
    tools = _links(BENCHMARK_TOOLS, user, benchmark, request.path)
    first = FIRST_STAGE.get(role)
    nav = {
        "benchmark": benchmark,
        "stages": stages,
        # What waits for this user, their own queue first (an annotator's assignments).
        "work": sorted((s for s in stages if s["waiting"]), key=lambda s: s["key"] != first),
        "current": next((s for s in stages if s["current"]), None),
        "tools": tools,
        "on_dashboard": url_name == "dashboard",
    }
    request._benchforge_nav = nav
    return nav


def global_places(request) -> list[dict]:
    """The top row's places, each with an id (`api-docs-link`) for pages and tests to point at."""
    places = _links(GLOBAL_PLACES, request.user, None, request.path)
    for place, link in zip(places, (link for link in GLOBAL_PLACES if has_role(request.user, link.role))):
        place["id"] = f"{link.url_name}-link"
    return places
