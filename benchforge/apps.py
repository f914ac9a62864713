import os
import sys

from django.apps import AppConfig
from django.conf import settings

DEV_KEY_WARNING = "benchforge: SECRET_KEY is not set, using the insecure development key; set it for any shared deployment.\n"


def starting_a_server(argv: list[str], environ) -> bool:
    """True in the process that will serve requests. `runserver` with the autoreloader runs twice
    (a watcher, and a child with RUN_MAIN=true that serves): only the child counts. migrate,
    seed_demo, shell and the rest start no server."""
    if len(argv) < 2 or argv[1] not in ("runserver", "serve"):
        return False
    return "--noreload" in argv or environ.get("RUN_MAIN") == "true"


_warned = False


def warn_about_dev_key(stream=None) -> None:
    """Once per process: runserver's serving process reaches both ready() and the WSGI module."""
    global _warned
    if settings.SECRET_KEY == settings.DEV_SECRET_KEY and not _warned:
        _warned = True
        (stream or sys.stderr).write(DEV_KEY_WARNING)


class BenchforgeConfig(AppConfig):
    name = "benchforge"

    def ready(self):
        from django.urls import register_converter

        from .inputs import IdConverter

        # Before any URLconf is imported: app routes use <id:...>.
        register_converter(IdConverter, "id")
        from django.contrib.auth.signals import user_logged_in

        from .i18n import remember_on_login

        user_logged_in.connect(remember_on_login, dispatch_uid="benchforge.i18n.remember_on_login")
        from . import after_response

        after_response.connect()
        if starting_a_server(sys.argv, os.environ):
            warn_about_dev_key()
