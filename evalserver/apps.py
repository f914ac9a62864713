from django.apps import AppConfig


class EvalServerConfig(AppConfig):
    name = "evalserver"
    verbose_name = "Evaluation server (outside teams submit predictions for a frozen release's hidden split)"

    def ready(self):
        from exports import selectors as exports

        from . import selectors

        # exports imports no app above it: this stage names the scores that are not the owners'.
        exports.register_outside_scores(selectors.outside_scores)
