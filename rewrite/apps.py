from django.apps import AppConfig
from django.utils.translation import gettext_lazy


class RewriteConfig(AppConfig):
    name = "rewrite"
    verbose_name = "Rewrite (LLM question rewrites, human verification)"

    def ready(self):
        from jobs import registry

        from . import services

        registry.register(services.BATCH_JOB, services.run_batch, label=gettext_lazy("rewrite batch"))
