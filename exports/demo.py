"""The demo's releases (development only). Release 1.0.0 of what the demo accepted, built; with the
built-in demo endpoints in the models file (llm.demo) it is also frozen and scored as a user would
(three demo models under CircularEval, pointwise and pairwise: a leaderboard to read and answers for
a human-evaluation study), and a second release, 1.1.0, is built beside it to compare. Without the
demo endpoints 1.0.0 is left built, for the user to freeze."""

from jobs import services as jobs
from llm import demo as llm_demo

from . import leaderboard
from .models import Release, Score
from .services import create_release, freeze, start_build

SECOND_VERSION = "1.1.0"
LATER_TASK = "writing"


def _score_demo_models(release: Release, researcher) -> list[Score]:
    """The leaderboard: each demo model under CircularEval and pointwise, the weaker two pairwise
    against the strongest. Every score through leaderboard.submit and its job."""
    strong, *others = llm_demo.ANSWERING
    made = []

    def score(label, method, endpoint, **kwargs):
        found = release.scores.filter(label=label, method=method).first()
        if found is None:
            found = leaderboard.submit(release, user=researcher, label=label, method=method, endpoint=endpoint, **kwargs)
            jobs.see_through(found.job)
            found.refresh_from_db()
        made.append(found)
        return found

    for name in llm_demo.ANSWERING:
        score(name, Score.Method.MCQ, name)
    pointwise = {name: score(name, Score.Method.POINTWISE, name, judge=llm_demo.JUDGE) for name in llm_demo.ANSWERING}
    anchor = pointwise[strong]
    if anchor.status == Score.Status.DONE:
        for name in others:
            score(name, Score.Method.PAIRWISE, name, judge=llm_demo.JUDGE, anchor=anchor)
    return made


def add_demo(benchmark, users: dict) -> str:
    """Idempotent: finds what an earlier run made and adds only what is missing."""
    researcher = users["researcher"]
    release = Release.objects.filter(benchmark=benchmark).order_by("created_at").first()
    existed = release is not None
    if release is None:
        if not benchmark.items.filter(status__in=["accepted", "rewritten", "qc_passed"]).exists():
            return "No release: nothing is accepted yet."
        # With the demo endpoints, 1.0.0 leaves the writing task out and 1.1.0 adds it: a comparison with news.
        later = benchmark.tasks.filter(slug=LATER_TASK) if llm_demo.demo_endpoints_ready() else benchmark.tasks.none()
        release = create_release(
            benchmark,
            user=researcher,
            version="1.0.0",
            notes="The demo's first release: every accepted item, the test split's answer keys, reference answers and criteria kept private (the default).",
            tasks=list(benchmark.tasks.exclude(pk__in=later)) if later else (),
        )
        release = start_build(release, user=researcher, here=True)
        if release.status != Release.Status.BUILT:
            return f"Release 1.0.0 did not build: {release.job.message}"
    if not llm_demo.demo_endpoints_ready():
        if release.status == Release.Status.BUILT and not existed:
            return f"Release 1.0.0: {release.counts['items']} items built; freeze it on its page to make it permanent."
        return f"Release {release.version} ({release.get_status_display().lower()})."
    if release.status == Release.Status.BUILT:
        release = freeze(release, user=researcher)
    if not release.is_frozen:
        return f"Release {release.version} ({release.get_status_display().lower()})."
    scores = _score_demo_models(release, researcher)
    done = sum(s.status == Score.Status.DONE for s in scores)
    second = Release.objects.filter(benchmark=benchmark, version=SECOND_VERSION).first()
    if second is None:
        second = create_release(
            benchmark,
            user=researcher,
            version=SECOND_VERSION,
            notes="The demo's second release: 1.0.0 and the writing task's items, to compare with 1.0.0.",
        )
        second = start_build(second, user=researcher, here=True)
    return (
        f"Releases: {release.version} frozen with {done} of {len(scores)} leaderboard scores by the demo models; "
        f"{second.version} {second.get_status_display().lower()} to compare."
    )
