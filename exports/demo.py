"""The demo's release (development only): release 1.0.0 of what the demo accepted, built and
frozen, so a new user can download a bundle, read its card and run the harness on it."""

from .models import Release
from .services import create_release, freeze, start_build


def add_demo(benchmark, users) -> str:
    """Idempotent: does nothing when the benchmark already has a release."""
    existing = Release.objects.filter(benchmark=benchmark).order_by("created_at").first()
    if existing is not None:
        return f"release {existing.version} ({existing.get_status_display().lower()})"
    researcher = users["researcher"]
    if not benchmark.items.filter(status__in=["accepted", "rewritten", "qc_passed"]).exists():
        return "no release: nothing is accepted yet"
    release = create_release(
        benchmark,
        user=researcher,
        version="1.0.0",
        notes="The demo's first release: every accepted item, answer keys of the test split kept private.",
    )
    release = start_build(release, user=researcher, here=True)
    if release.status != Release.Status.BUILT:
        return f"release 1.0.0 did not build: {release.job.message}"
    freeze(release, user=researcher)
    return f"release 1.0.0: {release.counts['items']} items, frozen, with its leaderboard open"
