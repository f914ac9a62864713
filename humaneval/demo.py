"""The demo's human-evaluation study (development only): a pointwise study of the demo models'
answers on the frozen release, planned and rated through this app's services as people would,
so its page has ratings and agreement figures to show. Needs the demo's scored release."""

from django.db.models import Q

from exports.models import Release, Score

from . import services
from .models import Rating, Study

DEMO_TITLE = "Demo: do people agree with the demo judge?"


def _demo_score(rating: Rating) -> int:
    """A person's score near the judge's, a point off now and then."""
    judged = rating.item.judge.get("rating") or rating.item.judge.get("score") or 5
    nudge = (rating.item.pk + rating.rater_id) % 3 - 1
    return max(1, min(10, int(round(float(judged))) + nudge))


def add_demo(benchmark, users: dict) -> str:
    """Idempotent: one study, once the release's pointwise scores are done."""
    study = Study.objects.filter(benchmark=benchmark, title=DEMO_TITLE).first()
    if study is None:
        release = Release.objects.filter(benchmark=benchmark, status=Release.Status.FROZEN).order_by("created_at").first()
        scores = list(release.scores.filter(method=Score.Method.POINTWISE, status=Score.Status.DONE)) if release else []
        if not scores:
            return "Human evaluation: skipped (no pointwise score on a frozen release)."
        study = services.create_study(
            release,
            user=users["researcher"],
            title=DEMO_TITLE,
            mode=Study.Mode.POINTWISE,
            scores=scores,
            raters=[users["annotator"], users["annotator2"]],
            per_task=1,
        )
    # One rater has rated everything, the other half of theirs: figures to read, a queue to try.
    pending = Rating.objects.filter(study=study, saved_at__isnull=True).select_related("item", "rater__user")
    for person, share in (("annotator2", 1.0), ("annotator", 0.5)):
        mine = list(pending.filter(rater__user=users[person]).order_by("position"))
        done_already = Rating.objects.filter(Q(study=study, rater__user=users[person]) & ~Q(saved_at=None)).count()
        wanted = int((len(mine) + done_already) * share) - done_already
        for rating in mine[: max(0, wanted)]:
            services.save_rating(
                rating, user=users[person], score=_demo_score(rating), reason="Demo rating: close to what the answer deserves."
            )
    saved = Rating.objects.filter(study=study).exclude(saved_at=None).count()
    return f"Human evaluation: study {study.number} ({study.items.count()} answers), {saved} of {study.ratings.count()} ratings saved."
