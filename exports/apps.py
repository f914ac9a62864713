from django.apps import AppConfig
from django.utils.translation import gettext_lazy


class ExportsConfig(AppConfig):
    name = "exports"
    verbose_name = "Releases (frozen, versioned bundles)"

    def ready(self):
        from jobs import registry

        from . import leaderboard, services

        registry.register(services.BUILD_JOB, services.run_build, label=gettext_lazy("release build"))
        registry.register(leaderboard.SCORE_JOB, leaderboard.run_score, label=gettext_lazy("leaderboard score"))
