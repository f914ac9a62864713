from django.apps import AppConfig
from django.utils.translation import gettext_lazy


def release_stage():
    from annotation.models import Item
    from benchforge.navigation import Link, Stage

    from . import selectors

    return Stage(
        "release",
        gettext_lazy("Release"),
        links=(Link(gettext_lazy("Releases"), "release-list"),),
        waiting=selectors.waiting_for,
        waiting_text=(gettext_lazy("%(n)s item is ready for a release"), gettext_lazy("%(n)s items are ready for a release")),
        changed_by=(Item,),
        pages=("release-",),
    )


class ExportsConfig(AppConfig):
    name = "exports"
    verbose_name = "Releases (frozen, versioned bundles)"

    def ready(self):
        from benchforge import navigation
        from jobs import registry

        from . import leaderboard, services

        registry.register(services.BUILD_JOB, services.run_build, label=gettext_lazy("release build"))
        registry.register(leaderboard.SCORE_JOB, leaderboard.run_score, label=gettext_lazy("leaderboard score"))
        navigation.register_stage(release_stage())
