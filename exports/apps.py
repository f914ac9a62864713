from django.apps import AppConfig


class ExportsConfig(AppConfig):
    name = "exports"
    verbose_name = "Releases (frozen, versioned bundles)"

    def ready(self):
        from jobs import registry

        from . import leaderboard, services

        registry.register(services.BUILD_JOB, services.run_build, label="release build")
        registry.register(leaderboard.SCORE_JOB, leaderboard.run_score, label="leaderboard score")
