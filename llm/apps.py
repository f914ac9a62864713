from django.apps import AppConfig
from django.utils.translation import gettext_lazy


class LLMConfig(AppConfig):
    name = "llm"
    label = "llm"
    verbose_name = "LLM calls (client, shared cache and concurrency bound, batches)"

    def ready(self):
        from jobs import registry

        from . import services

        registry.register(services.BATCH_JOB, services.run_batch_job, label=gettext_lazy("LLM batch"))
