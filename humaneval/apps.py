from django.apps import AppConfig
from django.utils.translation import gettext_lazy


def humaneval_stage():
    from benchforge.navigation import Link, Stage
    from benchforge.roles import RESEARCHER

    from . import selectors
    from .models import Rating, Study

    return Stage(
        "humaneval",
        gettext_lazy("Human evaluation"),
        links=(
            Link(gettext_lazy("Studies"), "humaneval-home"),
            Link(gettext_lazy("Plan a study"), "humaneval-plan", role=RESEARCHER),
        ),
        waiting=selectors.waiting_for,
        waiting_text=(gettext_lazy("%(n)s answer waits for your rating"), gettext_lazy("%(n)s answers wait for your rating")),
        changed_by=((Rating, "study__benchmark_id"), Study),
        pages=("humaneval-",),
    )


class HumanEvalConfig(AppConfig):
    name = "humaneval"
    verbose_name = "Human evaluation (blind ratings of model answers, judge validation)"

    def ready(self):
        from benchforge import navigation
        from exports import leaderboard
        from jobs import registry

        from . import selectors, services

        # The leaderboard shows beside each judged score whether people validated its judge; exports
        # may import no app above it, so this stage hands it the functions that say (reading the
        # stored figures, never recomputing them).
        leaderboard.register_validation_finder(
            lambda release: selectors.validations_for_release(release, figures_of=services.current_figures)
        )
        leaderboard.register_card_citations(
            lambda release: selectors.card_citations(release, figures_of=services.current_figures)
        )
        registry.register(services.FIGURES_JOB, services.run_figures, label=gettext_lazy("human-evaluation figures"))
        navigation.register_stage(humaneval_stage())
