from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "review"
    verbose_name = "Review (cross-review rounds, expert verification)"

    def ready(self):
        from jobs import registry

        from . import services

        registry.register(services.OPEN_ROUND_JOB, services.run_round_opening, label="review round opening")
