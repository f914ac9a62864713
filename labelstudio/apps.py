from django.apps import AppConfig
from django.utils.translation import gettext_lazy


class LabelStudioConfig(AppConfig):
    name = "labelstudio"
    verbose_name = "Label Studio interop (push items, pull annotations)"

    def ready(self):
        from jobs import registry

        from . import services
        from .selectors import PULL_JOB, PUSH_JOB

        registry.register(PUSH_JOB, services.run_push, label=gettext_lazy("Label Studio push"))
        registry.register(PULL_JOB, services.run_pull, label=gettext_lazy("Label Studio pull"))
