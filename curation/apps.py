from django.apps import AppConfig
from django.utils.translation import gettext_lazy


class CurationConfig(AppConfig):
    name = "curation"
    verbose_name = "Curation (taxonomy and images)"

    def ready(self):
        from benchforge import navigation, permissions
        from jobs import registry

        from . import selectors, services, signals  # noqa: F401 (signals: a deleted benchmark's jobs go)

        navigation.register_benchmark_finder(selectors.find_benchmark_for)
        permissions.register_member_benchmark_ids(selectors.member_benchmark_ids)
        registry.register_benchmarks(by_id=selectors.benchmarks_by_id, ids_with_slug=selectors.benchmark_ids_with_slug)
        registry.register("load_preset", services.run_preset_load, label=gettext_lazy("taxonomy preset"))
        registry.register("ingest_zip", services.run_zip_import, label=gettext_lazy("zip import"))
        registry.register("ingest_folder", services.run_folder_import, label=gettext_lazy("server folder import"))
        registry.register("ingest_url_list", services.run_url_list_import, label=gettext_lazy("URL list import"))
