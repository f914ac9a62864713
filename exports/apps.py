from django.apps import AppConfig


class ExportsConfig(AppConfig):
    name = "exports"
    verbose_name = "Releases (frozen, versioned bundles)"

    def ready(self):
        from jobs import registry

        from . import services

        registry.register(services.BUILD_JOB, services.run_build, label="release build")
