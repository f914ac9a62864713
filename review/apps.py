from django.apps import AppConfig
from django.utils.translation import gettext_lazy


def review_stage():
    from annotation.models import Item
    from benchforge.navigation import Link, Stage
    from benchforge.roles import RESEARCHER, REVIEWER

    from . import selectors
    from .models import Review, ReviewRound

    return Stage(
        "review",
        gettext_lazy("Review"),
        role=REVIEWER,
        links=(Link(gettext_lazy("My reviews"), "review-queue"), Link(gettext_lazy("Rounds"), "review-home")),
        waiting=selectors.waiting_for,
        waiting_text=(gettext_lazy("%(n)s review or item waits for you"), gettext_lazy("%(n)s reviews or items wait for you")),
        changed_by=((Review, "round__benchmark_id"), ReviewRound, Item),
        start={RESEARCHER: "review-home"},
        pages=("review-",),
    )


class ReviewConfig(AppConfig):
    name = "review"
    verbose_name = "Review (cross-review rounds, expert verification)"

    def ready(self):
        from benchforge import navigation
        from jobs import registry

        from . import services

        registry.register(services.OPEN_ROUND_JOB, services.run_round_opening, label=gettext_lazy("review round opening"))
        navigation.register_stage(review_stage())
