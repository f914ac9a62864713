"""The interface language: English or Simplified Chinese, by Django's own translation machinery.

Pages: the language a person chose (kept on their account, copied into the session at login so a
page costs no query) else the browser's (LocaleMiddleware reads Accept-Language). The API keeps
its field names and codes in English and translates `detail` messages by Accept-Language only.
"""

from collections.abc import Callable

from django.conf import settings
from django.http import HttpResponseRedirect
from django.utils import translation
from django.utils.translation import get_language
from django.views.decorators.http import require_POST

from .kept import SettingsGeneration
from .security import same_site_url

SESSION_KEY = "account_language"

# Kept texts of the old catalogs are never served once the settings that choose them change.
CATALOGS = SettingsGeneration("LANGUAGES", "LANGUAGE_CODE", "LOCALE_PATHS", "INSTALLED_APPS")


class PerLanguage:
    """`build()`'s value (translated texts: a tag's labels, a model's choices with their labels as
    plain strings), built once per interface language. Lazy labels are translated anew every time
    they are shown: the editor showed about thirty of them per view (docs/web-costs.md)."""

    def __init__(self, build: Callable[[], object]):
        self._build, self._kept = build, {}

    def get(self):
        key = (get_language(), CATALOGS.value)
        found = self._kept.get(key)
        if found is None:
            found = self._kept[key] = self._build()
        return found


def account_language(user) -> str:
    from .models import AccountSettings

    chosen = AccountSettings.objects.filter(user=user).values_list("language", flat=True).first()
    return chosen or ""


class AccountLanguageMiddleware:
    """After LocaleMiddleware and authentication: a page is shown in the language on the account."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        chosen = request.session.get(SESSION_KEY) if hasattr(request, "session") else None
        if chosen and not request.path_info.startswith("/api/"):
            translation.activate(chosen)
            request.LANGUAGE_CODE = chosen
        return self.get_response(request)


def remember_on_login(sender, request, user, **kwargs):
    request.session[SESSION_KEY] = account_language(user)


@require_POST
def set_language(request):
    """The language switch in the header: kept on the account; blank goes back to the browser's."""
    from .models import AccountSettings

    language = request.POST.get("language", "")
    if language and language not in dict(settings.LANGUAGES):
        language = ""
    AccountSettings.objects.update_or_create(user=request.user, defaults={"language": language})
    request.session[SESSION_KEY] = language
    response = HttpResponseRedirect(same_site_url(request, request.POST.get("next"), fallback="/"))
    if language:
        response.set_cookie(settings.LANGUAGE_COOKIE_NAME, language, samesite="Lax")
    else:
        response.delete_cookie(settings.LANGUAGE_COOKIE_NAME)
    return response
