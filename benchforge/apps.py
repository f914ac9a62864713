from django.apps import AppConfig


class BenchforgeConfig(AppConfig):
    name = "benchforge"

    def ready(self):
        from django.urls import register_converter

        from .inputs import IdConverter

        # Before any URLconf is imported: app routes use <id:...>.
        register_converter(IdConverter, "id")
