"""Content negotiation for the API (its own module: DRF loads it while rest_framework.views is
still importing, so it must not import views)."""

from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation


class JsonUnlessAsked(DefaultContentNegotiation):
    """The API speaks JSON: an Accept header naming nothing a view renders (text/html from a
    browser, application/xml) gets the view's first renderer instead of a 406. A view with several
    renderers (the schema: YAML or JSON) still honours Accept and ?format=."""

    def select_renderer(self, request, renderers, format_suffix=None):
        try:
            return super().select_renderer(request, renderers, format_suffix)
        except NotAcceptable:
            return renderers[0], renderers[0].media_type
