from django.apps import AppConfig


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
        registry.register("load_preset", services.run_preset_load, label="taxonomy preset")
        registry.register("ingest_zip", services.run_zip_import, label="zip import")
        registry.register("ingest_folder", services.run_folder_import, label="server folder import")
        registry.register("ingest_url_list", services.run_url_list_import, label="URL list import")
