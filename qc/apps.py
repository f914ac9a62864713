from django.apps import AppConfig
from django.utils.translation import gettext_lazy


class QcConfig(AppConfig):
    name = "qc"
    verbose_name = "Quality control (text-only and all-fail filters, external benchmarks)"

    def ready(self):
        from jobs import registry

        from . import services

        registry.register(services.QC_RUN_JOB, services.run_qc_part, label=gettext_lazy("QC run"))
        registry.register(services.IMPORT_JOB, services.run_import, label=gettext_lazy("external benchmark import"))
