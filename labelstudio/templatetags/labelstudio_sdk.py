"""{% labelstudio_sdk_problem as problem %}: what to install when label-studio-sdk (the optional
extra) is missing, else None, so a page can say so instead of offering buttons that cannot work."""

from django import template

from labelstudio.client import sdk_problem

register = template.Library()


@register.simple_tag
def labelstudio_sdk_problem() -> str | None:
    return sdk_problem()
