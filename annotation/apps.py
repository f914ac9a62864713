from django.apps import AppConfig
from django.utils.translation import gettext_lazy


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation (items, criteria, review)"

    def ready(self):
        from jobs import registry

        from . import alignmmbench, services

        registry.register(services.ALIGNMMBENCH_JOB, alignmmbench.run_import, label=gettext_lazy("AlignMMBench import"))
