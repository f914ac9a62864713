from django.apps import AppConfig
from django.utils.translation import gettext_lazy


def rewrite_stage():
    from benchforge.navigation import Link, Stage
    from benchforge.roles import REVIEWER

    from . import selectors
    from .models import Rewrite

    return Stage(
        "rewrite",
        gettext_lazy("Rewrite"),
        role=REVIEWER,
        links=(
            Link(gettext_lazy("Batches"), "rewrite-home"),
            Link(gettext_lazy("Verify"), "rewrite-next"),
            Link(gettext_lazy("Prompt templates"), "rewrite-templates"),
        ),
        waiting=selectors.waiting_for,
        waiting_text=(gettext_lazy("%(n)s seed has rewrites to verify"), gettext_lazy("%(n)s seeds have rewrites to verify")),
        changed_by=((Rewrite, "seed__benchmark_id"),),
        pages=("rewrite-",),
    )


class RewriteConfig(AppConfig):
    name = "rewrite"
    verbose_name = "Rewrite (LLM question rewrites, human verification)"

    def ready(self):
        from benchforge import navigation
        from jobs import registry

        from . import services

        registry.register(services.BATCH_JOB, services.run_batch, label=gettext_lazy("rewrite batch"))
        navigation.register_stage(rewrite_stage())
