from django.apps import AppConfig


class ExportsConfig(AppConfig):
    name = "exports"
