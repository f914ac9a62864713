from django.apps import AppConfig


class RewriteConfig(AppConfig):
    name = "rewrite"
