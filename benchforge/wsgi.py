import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchforge.settings")
application = get_wsgi_application()

# A WSGI server loading the app is a server starting (runserver warns from BenchforgeConfig).
from benchforge.apps import warn_about_dev_key  # noqa: E402

warn_about_dev_key()
