from django.apps import AppConfig
from django.utils.translation import gettext_lazy


def qc_stage():
    from benchforge.navigation import Link, Stage
    from benchforge.roles import RESEARCHER

    from . import selectors
    from .models import QCItem

    return Stage(
        "qc",
        gettext_lazy("QC"),
        role=RESEARCHER,
        links=(Link(gettext_lazy("Runs"), "qc-home"), Link(gettext_lazy("Import a benchmark"), "qc-import", global_page=True)),
        waiting=selectors.waiting_for,
        waiting_text=(
            gettext_lazy("%(n)s flagged item waits for a decision"),
            gettext_lazy("%(n)s flagged items wait for a decision"),
        ),
        changed_by=((QCItem, "run__benchmark_id"),),
        pages=("qc-",),
    )


class QcConfig(AppConfig):
    name = "qc"
    verbose_name = "Quality control (text-only and all-fail filters, external benchmarks)"

    def ready(self):
        from benchforge import navigation
        from jobs import registry

        from . import services

        registry.register(services.QC_RUN_JOB, services.run_qc_part, label=gettext_lazy("QC run"))
        registry.register(services.IMPORT_JOB, services.run_import, label=gettext_lazy("external benchmark import"))
        navigation.register_stage(qc_stage())
