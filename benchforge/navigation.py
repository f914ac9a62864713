"""The navigation inside a benchmark: the pipeline's stages in order, each with what waits there
for the person looking, and the pages of each stage. Adding a stage (human evaluation) is one
more `register_stage` call, from the app's AppConfig.ready().

The project package imports no app, so each app registers its stage with the selector that counts
its waiting work. That selector takes (user, benchmark) and returns a queryset of what waits for
that user, a tuple of querysets whose counts add up, or None when nothing in the stage waits for
someone of that role. It builds querysets only: every stage is counted in one database query
(`waiting_counts`), so a page costs the same whatever the size of the benchmark.

Every page shows the counts, and building and compiling that query cost more CPU than the rest of
a small page; so a member's counts are kept in the cache (`cached_waiting_counts`) until something
changes in their benchmark: a save or delete of a model a stage names in `changed_by`, any request
that is not a read (`NavigationCountsMiddleware`: bulk updates send no signals), a job's end, and at
the latest after BENCHFORGE_NAV_CACHE_SECONDS. Each benchmark has its own version of the counts, so
one team's edits leave every other benchmark's kept counts valid; a change whose benchmark is not
known (a write outside /b/<slug>/, a deleted row whose parent went first) drops every benchmark's.

What pages keep comes in two kinds (`kept_for_benchmark(..., on=...)`), each with its version:
- WORK: what the team's work changes (counts, queues, list counts);
- SETUP: what only the benchmark's setup changes (its tasks and categories, members, name and
  settings): the header without its counts, task rows, the editor's tasks and guidelines, people
  selects, the dashboard's rendered counts (their numbers are its RecentCounts', which no write
  drops). A change of setup is a change of work too (a queue shows task names).
A team at work writes all day (submits, verdicts, ratings); those views are marked
`changes_work_only`, so the next page of each member counts again but rebuilds none of its setup.
Any other write request, a job's end and a save or delete of a setup model (`watch_setup`) drop both.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache, wraps

from django.conf import settings
from django.core.cache import cache
from django.db.models import IntegerField, Subquery
from django.db.models.signals import post_delete, post_save
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils.translation import gettext_lazy as _

from .compiled import Compiled
from .roles import ANNOTATOR, RESEARCHER, REVIEWER, has_role, user_role
from .throttling import CACHE_ERRORS, cache_set, note_outage

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
            return reverse_once(self.url_name, benchmark.slug)
        url = reverse_once(self.url_name)
        return f"{url}?{self.from_benchmark}={benchmark.slug}" if self.from_benchmark else url


def reverse_once(url_name: str, slug: str | None = None) -> str:
    """reverse(), remembered: every page's header links the same few dozen addresses (resolving
    each anew was a good part of the header's cost)."""
    return _reverse_under(get_script_prefix(), get_urlconf() or settings.ROOT_URLCONF, url_name, slug)


@lru_cache(maxsize=4096)
def _reverse_under(prefix: str, urlconf, url_name: str, slug: str | None) -> str:
    return reverse(url_name, urlconf=urlconf, args=[slug] if slug is not None else None)


@dataclass(frozen=True)
class Stage:
    key: str
    label: str
    links: tuple[Link, ...]
    role: str = ANNOTATOR  # the least role that sees the stage
    # The selector of what waits here for a user (see the module's docstring), and how to say how
    # many: (one, several), each with %(n)s.
    waiting: Callable | None = None
    waiting_text: tuple[str, str] = ("", "")
    # The models whose saves and deletes may change the count (the benchmark's cached counts are
    # dropped): a model with a `benchmark_id`, or (model, "path__to__benchmark_id").
    changed_by: tuple = ()
    # Where the stage's tab leads for a role, when not to its first page that role may open.
    start: dict[str, str] = field(default_factory=dict)
    # URL names of the pages that belong to the stage (prefixes), so its tab shows as current.
    pages: tuple[str, ...] = ()


# The pipeline's order. Each app registers its own stage (register_stage, from its AppConfig.ready():
# the project package imports no app, and naming code by dotted path would hide the dependency
# from import-linter); a registered stage whose key is not listed here comes after these.
STAGE_ORDER: tuple[str, ...] = ("collect", "author", "review", "rewrite", "qc", "release", "humaneval")

_registered: dict[str, Stage] = {}
STAGES: tuple[Stage, ...] = ()  # the registered stages in pipeline order (register_stage keeps it)


def register_stage(stage: Stage) -> None:
    """Add (or replace) a stage of the navigation; its `waiting` selector is a function."""
    global STAGES
    _registered[stage.key] = stage
    watch(stage.changed_by)
    rank = {key: n for n, key in enumerate(STAGE_ORDER)}
    STAGES = tuple(sorted(_registered.values(), key=lambda s: rank.get(s.key, len(rank))))


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


def waiting_counts(user, benchmark, stages=STAGES) -> dict[str, int | None]:
    """{stage key: how many things wait there for `user`} (None: nothing can wait there for
    their role), all counted in one query. The query is built by the stages' selectors and compiled
    once per role and set of stages (with a stand-in member and benchmark), then run with this
    member's and benchmark's ids: after every write in a benchmark each member's counts are counted
    again, and building and compiling the query was most of a page's CPU then (docs/web-costs.md)."""
    shape = (type(benchmark), user_role(user), tuple((stage.key, stage.waiting) for stage in stages))
    row = next(iter(_COUNTS.rows(shape, user_id=user.pk, benchmark_id=benchmark.pk)), None)
    parts, counts = _COUNT_PARTS[shape]
    counts = dict(counts)
    for name in parts:
        key = name.split("__")[0]
        counts[key] = (counts.get(key) or 0) + (getattr(row, name) if row is not None else 0)
    return counts


def _counts_query(shape, *, user_id: int, benchmark_id: int):
    """The counts of `shape` (benchmark model, role, stages) for a stand-in member of that role and a
    stand-in benchmark; notes which parts it counts and which stages have none (_COUNT_PARTS)."""
    from django.contrib.auth import get_user_model

    benchmark_model, role, stages = shape
    member, benchmark = get_user_model()(pk=user_id), benchmark_model(pk=benchmark_id)
    member._benchforge_role = role  # what the selectors ask of a member besides its id
    parts, counts = {}, {}
    for key, waiting in stages:
        found = waiting(member, benchmark) if waiting else None
        if found is None:
            counts[key] = None
            continue
        for n, queryset in enumerate(found if isinstance(found, tuple) else (found,)):
            parts[f"{key}__{n}"] = CountOf(queryset.order_by().values("pk"))
    _COUNT_PARTS[shape] = (tuple(parts), counts)
    # The key's own column name (raw rows need it), and no ordering (one row).
    return benchmark_model.objects.filter(pk=benchmark_id).values(benchmark_model._meta.pk.attname, **parts).order_by()


_COUNT_PARTS: dict = {}
_COUNTS = Compiled(_counts_query, user_id=-7_301_422_031, benchmark_id=-7_301_422_032)


GENERATION_KEY = "nav:generation"  # every benchmark's kept values, of both kinds

# The two kinds of kept values (see the module's docstring).
WORK, SETUP = "work", "setup"


def _generation_key(benchmark_id, on: str = WORK) -> str:
    return f"nav:generation:{benchmark_id}" if on == WORK else f"nav:setup:{benchmark_id}"


def _bump(key: str) -> None:
    try:
        try:
            cache.incr(key)
        except ValueError:  # not there yet (or evicted)
            cache.add(key, 0, timeout=None)
            cache.incr(key)
    except CACHE_ERRORS as exc:  # kept counts expire on their own (BENCHFORGE_NAV_CACHE_SECONDS)
        note_outage(exc, "the navigation's kept counts expire on their own")


def changed(benchmark_id=None, **_ignored) -> None:
    """Work changed in benchmark `benchmark_id` (something a count may read): what it keeps of the
    WORK kind is dropped (one counter per benchmark, so one cache write however many members);
    without a benchmark, everything every benchmark keeps."""
    _bump(_generation_key(benchmark_id) if benchmark_id is not None else GENERATION_KEY)


def setup_changed(benchmark_id=None, **_ignored) -> None:
    """The setup of benchmark `benchmark_id` changed (tasks, members, name, settings), or may have:
    everything it keeps is dropped, of both kinds; without a benchmark, every benchmark's."""
    if benchmark_id is None:
        _bump(GENERATION_KEY)
        return
    _bump(_generation_key(benchmark_id, SETUP))
    _bump(_generation_key(benchmark_id))


# How to find the benchmark of a watched row whose model has no `benchmark_id`: the path through its
# relations (`round__benchmark_id`), as the stage names it in `changed_by` ((Model, path)).
_benchmark_paths: dict[type, str] = {}


def _benchmark_id_of(instance, *, deleted: bool = False):
    """The id of the benchmark a watched row belongs to, or None when it cannot be told. A relation
    already loaded is followed; otherwise a saved row's parent is read (one query), a deleted row's
    is not (a cascade deleting a round's thousand reviews would ask a thousand times, and the
    parent may be gone): None."""
    path = _benchmark_paths.get(type(instance), "benchmark_id")
    first, _, rest = path.partition("__")
    if not rest:
        return getattr(instance, first, None)
    relation = instance._meta.get_field(first)
    if relation.is_cached(instance):
        value = relation.get_cached_value(instance)
        for part in rest.split("__"):
            value = getattr(value, part, None) if value is not None else None
        return value
    pk = getattr(instance, relation.attname)
    if deleted or pk is None:
        return None
    return relation.related_model._default_manager.filter(pk=pk).values_list(rest, flat=True).first()


def _row_saved(sender, instance, **_ignored) -> None:
    changed(_benchmark_id_of(instance))


def _row_deleted(sender, instance, **_ignored) -> None:
    changed(_benchmark_id_of(instance, deleted=True))


def _setup_row_saved(sender, instance, **_ignored) -> None:
    setup_changed(_benchmark_id_of(instance))


def _setup_row_deleted(sender, instance, **_ignored) -> None:
    setup_changed(_benchmark_id_of(instance, deleted=True))


def watch(models) -> None:
    """Drop the cached counts of a row's benchmark whenever a row of these models is saved or
    deleted. Each entry is a model with a `benchmark_id`, or (model, path to the benchmark's id)."""
    _connect(models, _row_saved, _row_deleted, "nav-counts")


def watch_setup(models) -> None:
    """As watch(), for the models of a benchmark's setup: a row saved or deleted drops everything the
    benchmark keeps. The benchmark model itself is given as (model, "pk")."""
    _connect(models, _setup_row_saved, _setup_row_deleted, "nav-setup")


def _connect(models, saved, deleted, uid: str) -> None:
    for entry in models:
        model, path = entry if isinstance(entry, tuple) else (entry, "benchmark_id")
        _benchmark_paths[model] = path
        post_save.connect(saved, sender=model, dispatch_uid=f"{uid}-save-{model._meta.label}")
        post_delete.connect(deleted, sender=model, dispatch_uid=f"{uid}-delete-{model._meta.label}")


@dataclass(frozen=True)
class Keep:
    """A value a page keeps (kept_together): its key, how to compute it, what it reads (`on`: WORK or
    SETUP, see the module's docstring) and, if not the default, how long to keep it (keep_for())."""

    key: str
    compute: Callable
    on: str = WORK
    keep_for: Callable | None = None


def kept_together(benchmark_id, wanted: list[Keep], *, consequence: str = "counted afresh") -> list:
    """Each wanted value, kept in the cache until something it reads changes in the benchmark, or for
    at most BENCHFORGE_NAV_CACHE_SECONDS (or keep_for() seconds, asked once the value is computed);
    all read in one cache round trip (a page's header and its counts are two values). Values are
    computed in the order given, when not kept."""
    generations = {keep.on: _generation_key(benchmark_id, keep.on) for keep in wanted}
    keys = [f"nav:kept:{benchmark_id}:{keep.on}:{keep.key}" for keep in wanted]
    try:
        found = cache.get_many([GENERATION_KEY, *generations.values(), *keys])
    except CACHE_ERRORS as exc:
        note_outage(exc, consequence)
        return [keep.compute() for keep in wanted]
    values = []
    for keep, full in zip(wanted, keys):
        generation = (found.get(GENERATION_KEY, 0), found.get(generations[keep.on], 0))
        kept = found.get(full)
        if kept is not None and kept[0] == generation:
            values.append(kept[1])
            continue
        value = keep.compute()
        cache_set(full, (generation, value), keep.keep_for() if keep.keep_for else settings.BENCHFORGE_NAV_CACHE_SECONDS)
        values.append(value)
    return values


def kept_for_benchmark(
    benchmark_id,
    key: str,
    compute: Callable,
    *,
    on: str = WORK,
    consequence: str = "counted afresh",
    keep_for: Callable | None = None,
):
    """compute(), kept as kept_together keeps it: one cache read instead of building and running a query."""
    return kept_together(benchmark_id, [Keep(key, compute, on, keep_for)], consequence=consequence)[0]


def kept_counts(user, benchmark, stages) -> Keep:
    """waiting_counts, kept per member, benchmark and role until the work changes (see the module's
    docstring), for kept_together."""
    return Keep(
        f"counts:{user.pk}:{user_role(user)}:{','.join(s.key for s in stages)}", lambda: waiting_counts(user, benchmark, stages)
    )


def cached_waiting_counts(user, benchmark, stages) -> dict[str, int | None]:
    """waiting_counts, kept (kept_counts): one cache read per page instead of building and running the query."""
    return kept_together(benchmark.pk, [kept_counts(user, benchmark, stages)], consequence="the navigation counts afresh")[0]


class NavigationCountsMiddleware:
    """A request that may have written (any method but GET, HEAD, OPTIONS) drops what pages keep
    once it is answered: services also write with bulk updates, which send no signals. A write to a
    page inside a benchmark (/b/<slug>/..., /api/v1/benchmarks/<slug>/...) drops that benchmark's;
    any other write, every one's.
    By default both kinds (setup_changed); a view marked `changes_work_only`, the WORK kind; one
    marked `changes_nothing_kept`, nothing."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            kind = getattr(request, _WRITES, SETUP)
            if kind == WORK:
                changed(_written_benchmark_id(request))
            elif kind == SETUP:
                setup_changed(_written_benchmark_id(request))
        return response


_WRITES = "_benchforge_writes"


def _marked(view, kind):
    @wraps(view)
    def marked(request, *args, **kwargs):
        setattr(request, _WRITES, kind)
        return view(request, *args, **kwargs)

    return marked


def changes_nothing_kept(view):
    """For a write view whose writes no kept value reads (no stage's count, no header, task row or
    select): its requests leave the benchmark's kept values valid. The editor's save is one: an
    item's text, task and images are in no count, and autosave sends it every few seconds of typing,
    which had dropped every member's counts and header with each save (at a million items a page
    then cost two to four times its CPU and up to 25 ms more in the database). Only for views whose
    writes are sure to be of that kind: anything else keeps the default."""
    return _marked(view, None)


def changes_work_only(view):
    """For a write view that changes the team's work (items' statuses, assignments, reviews,
    ratings...) and never the benchmark's setup (tasks, categories, members, name, settings): its
    requests drop the WORK kind of kept values only. A submit or a verdict had also rebuilt every
    member's header, task rows and selects. A setup model saved meanwhile still drops both
    (watch_setup); only for views whose bulk writes touch no setup table."""
    return _marked(view, WORK)


# Where a `slug` in the address is a benchmark's: its pages and its part of the API.
_BENCHMARK_PREFIXES = ("/b/", "/api/v1/benchmarks/")


def _written_benchmark_id(request):
    match = getattr(request, "resolver_match", None)
    slug = match.kwargs.get("slug") if match and request.path_info.startswith(_BENCHMARK_PREFIXES) else None
    user = getattr(request, "user", None)
    if not slug or user is None or not user.is_authenticated:
        return None
    found = find_benchmark(user, slug)  # a slug the user may not see (or renamed meanwhile): every benchmark's
    return found.pk if found is not None else None


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


def visible_stages(user) -> list[Stage]:
    """The stages the user's role sees, in pipeline order."""
    return [stage for stage in STAGES if has_role(user, stage.role)]


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
    visible = visible_stages(user)
    counts = cached_waiting_counts(user, benchmark, visible)
    stages = []
    for stage in visible:
        links = _links(stage.links, user, benchmark, request.path)
        start = stage.start.get(role)
        url = reverse_once(start, benchmark.slug) if start else links[0]["url"]
        n = counts.get(stage.key)
        one, several = stage.waiting_text
        stages.append(
            {
                "stage": stage,
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
