"""Markdown written by people (a release's notes inside its dataset card) shown as a page.

markdown-it-py turns CommonMark (with tables) into HTML with raw HTML switched off, and nh3
(Ammonia) then keeps only the tags and attributes below: whatever the text holds, no script,
event handler, style or javascript: link reaches the page. Relative links point inside a
bundle, not at this site: `links` maps the ones the page can serve, the others are dropped.
"""

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")

TAGS = {
    *("h1", "h2", "h3", "h4", "h5", "h6", "p", "br", "hr", "blockquote", "pre", "code", "em", "strong"),
    *("ul", "ol", "li", "a", "img", "table", "thead", "tbody", "tr", "th", "td"),
}
ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt", "title"}, "ol": {"start"}}
SCHEMES = {"http", "https", "mailto"}


def _is_relative(url: str) -> bool:
    return bool(url) and "://" not in url and not url.startswith(("/", "#", "mailto:"))


def markdown_to_html(text: str, *, links: dict[str, str] | None = None) -> SafeString:
    links = links or {}

    def keep(tag: str, attribute: str, value: str) -> str | None:
        if attribute in ("href", "src") and _is_relative(value):
            return links.get(value)  # None drops it: the bundle's files are not pages of this site
        return value

    html = nh3.clean(
        _MARKDOWN.render(text or ""),
        tags=TAGS,
        attributes=ATTRIBUTES,
        url_schemes=SCHEMES,
        attribute_filter=keep,
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )
    return mark_safe(html)  # noqa: S308 - sanitised by nh3 just above
