from django.apps import AppConfig
from django.utils.translation import gettext_lazy


class ReviewConfig(AppConfig):
    name = "review"
    verbose_name = "Review (cross-review rounds, expert verification)"

    def ready(self):
        from jobs import registry

        from . import services

        registry.register(services.OPEN_ROUND_JOB, services.run_round_opening, label=gettext_lazy("review round opening"))
