"""A generation of the settings a kept output depends on, bumped when one of them changes (tests
override settings), so nothing built under the old ones is served: the translation catalogs'
(benchforge.i18n.CATALOGS, for kept_i18n and PerLanguage) and static addresses' (kept_static)."""

from django.core.signals import setting_changed


class SettingsGeneration:
    def __init__(self, *names: str):
        self.names, self.value = frozenset(names), 0
        setting_changed.connect(self._changed, weak=False)

    def _changed(self, setting, **_ignored) -> None:
        if setting in self.names:
            self.value += 1
