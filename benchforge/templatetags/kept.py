"""What the kept tag libraries (kept_i18n, kept_static) share: a generation of the settings a kept
output depends on, bumped when one of them changes (tests override settings), so nothing rendered
under the old ones is served."""

from django.core.signals import setting_changed


class SettingsGeneration:
    def __init__(self, *names: str):
        self.names, self.value = frozenset(names), 0
        setting_changed.connect(self._changed, weak=False)

    def _changed(self, setting, **_ignored) -> None:
        if setting in self.names:
            self.value += 1
