"""The demo's release (development only): release 1.0.0 of what the demo accepted, built and
left for the user to freeze, so a new user can download a bundle, read its card, compare, and try
freezing (which moves its items to released, so the demo keeps its accepted items until then)."""

from .models import Release
from .services import create_release, start_build


def add_demo(benchmark, users: dict) -> str:
    """Idempotent: does nothing when the benchmark already has a release."""
    existing = Release.objects.filter(benchmark=benchmark).order_by("created_at").first()
    if existing is not None:
        return f"Release {existing.version} ({existing.get_status_display().lower()})."
    researcher = users["researcher"]
    if not benchmark.items.filter(status__in=["accepted", "rewritten", "qc_passed"]).exists():
        return "No release: nothing is accepted yet."
    release = create_release(
        benchmark,
        user=researcher,
        version="1.0.0",
        notes="The demo's first release: every accepted item, the test split's answer keys, reference answers and criteria kept private (the default).",
    )
    release = start_build(release, user=researcher, here=True)
    if release.status != Release.Status.BUILT:
        return f"Release 1.0.0 did not build: {release.job.message}"
    return f"Release 1.0.0: {release.counts['items']} items built; freeze it on its page to make it permanent."
