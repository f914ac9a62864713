from django.apps import AppConfig


class BenchforgeConfig(AppConfig):
    name = "benchforge"
