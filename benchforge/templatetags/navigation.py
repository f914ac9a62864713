"""{% benchmark_nav as nav %} and {% global_places as places %}: the header's data (benchforge.navigation)."""

from django import template

from benchforge import navigation

register = template.Library()


@register.simple_tag(takes_context=True)
def benchmark_nav(context):
    request, benchmark = context.get("request"), context.get("benchmark")
    if request is None or benchmark is None or not getattr(request.user, "is_authenticated", False):
        return None
    return navigation.benchmark_navigation(request, benchmark)


@register.simple_tag(takes_context=True)
def global_places(context):
    request = context.get("request")
    if request is None or not getattr(request.user, "is_authenticated", False):
        return []
    return navigation.global_places(request)
