from django.apps import AppConfig


class LabelStudioConfig(AppConfig):
    name = "labelstudio"
    verbose_name = "Label Studio interop (push items, pull annotations)"
