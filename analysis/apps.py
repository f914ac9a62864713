from django.apps import AppConfig
from django.utils.translation import gettext_lazy


class AnalysisConfig(AppConfig):
    name = "analysis"
    verbose_name = "Item analysis (which items separate models, which look broken, anchor splits)"

    def ready(self):
        from exports import card, leaderboard, views
        from exports import services as exports
        from humaneval import services as humaneval
        from jobs import registry

        from . import selectors, services

        registry.register(services.ANALYSIS_JOB, services.run_analysis, label=gettext_lazy("item analysis"))
        # exports imports no app above it: this stage tells it what to do and read.
        leaderboard.register_score_listener(services.on_score_done)
        humaneval.register_close_listener(services.on_study_closed)
        exports.register_left_out(selectors.left_out_for_build)
        card.register_bundle_extras(selectors.bundle_extras)
        views.register_release_page(gettext_lazy("Item analysis"), "release-analysis")
