from django.apps import AppConfig
from django.utils.translation import gettext_lazy


def author_stage():
    from benchforge.navigation import Link, Stage
    from benchforge.roles import ANNOTATOR, RESEARCHER

    from . import selectors
    from .models import Assignment

    return Stage(
        "author",
        gettext_lazy("Author"),
        links=(
            Link(gettext_lazy("Items"), "item-list"),
            Link(gettext_lazy("My queue"), "queue"),
            Link(gettext_lazy("New item"), "item-new"),
            Link(gettext_lazy("Assign"), "assign", role=RESEARCHER),
            Link(gettext_lazy("Import"), "item-import", role=RESEARCHER),
        ),
        waiting=selectors.open_assignments,
        waiting_text=(gettext_lazy("%(n)s assignment waits in your queue"), gettext_lazy("%(n)s assignments wait in your queue")),
        changed_by=(Assignment,),
        start={ANNOTATOR: "queue"},  # an annotator's work starts from their queue
        pages=("item-", "queue", "assign"),
    )


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation (items, criteria, review)"

    def ready(self):
        from benchforge import navigation
        from jobs import registry

        from . import alignmmbench, services

        registry.register(services.ALIGNMMBENCH_JOB, alignmmbench.run_import, label=gettext_lazy("AlignMMBench import"))
        navigation.register_stage(author_stage())
