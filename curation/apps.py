from django.apps import AppConfig
from django.utils.translation import gettext_lazy


def collect_stage():
    from benchforge.navigation import Link, Stage
    from benchforge.roles import RESEARCHER

    from . import selectors
    from .models import Image

    return Stage(
        "collect",
        gettext_lazy("Collect"),
        links=(
            Link(gettext_lazy("Images"), "image-grid"),
            Link(gettext_lazy("Upload"), "image-upload"),
            Link(gettext_lazy("Near duplicates"), "near-duplicates"),
            Link(gettext_lazy("Contamination"), "contamination"),
            Link(gettext_lazy("Taxonomy"), "taxonomy"),
            Link(gettext_lazy("Known sets"), "known-sets", role=RESEARCHER, global_page=True, from_benchmark="from"),
        ),
        waiting=selectors.images_to_screen,
        waiting_text=(gettext_lazy("%(n)s image waits for screening"), gettext_lazy("%(n)s images wait for screening")),
        changed_by=(Image,),
        pages=("image-", "near-duplicate", "contamination", "taxonomy", "task-edit", "preset-load", "known-set"),
    )


class CurationConfig(AppConfig):
    name = "curation"
    verbose_name = "Curation (taxonomy and images)"

    def ready(self):
        from benchforge import navigation, permissions
        from jobs import registry

        from . import models, selectors, services, signals  # noqa: F401 (signals: a deleted benchmark's jobs go)

        navigation.register_benchmark_finder(selectors.find_benchmark_for)
        navigation.register_stage(collect_stage())
        # What pages keep of the setup (task rows, headers, selects) is dropped when one of these changes.
        navigation.watch_setup(((models.Benchmark, "pk"), models.Category, models.Task))
        permissions.register_member_benchmark_ids(selectors.member_benchmark_ids)
        registry.register_benchmarks(by_id=selectors.benchmarks_by_id, ids_with_slug=selectors.benchmark_ids_with_slug)
        registry.register("load_preset", services.run_preset_load, label=gettext_lazy("taxonomy preset"))
        registry.register("ingest_zip", services.run_zip_import, label=gettext_lazy("zip import"))
        registry.register("ingest_folder", services.run_folder_import, label=gettext_lazy("server folder import"))
        registry.register("ingest_url_list", services.run_url_list_import, label=gettext_lazy("URL list import"))
