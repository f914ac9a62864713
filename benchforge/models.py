from django.conf import settings
from django.db import models


class AccountSettings(models.Model):
    """What a person chose for themselves, kept on the account so it follows them to any browser."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="account_settings"
    )
    # Blank: the browser's language (Accept-Language) decides.
    language = models.CharField(max_length=10, choices=settings.LANGUAGES, blank=True)
