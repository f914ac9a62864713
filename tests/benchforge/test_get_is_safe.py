"""A GET changes nothing: a crawler (or a browser prefetch) following every link of every page, as
each role on the demo, leaves every table as it was."""

import hashlib
from collections import deque
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import pytest
from django.apps import apps

from demo.management.commands.seed_demo import DEMO_USERS

pytestmark = pytest.mark.django_db

# Sessions and login records change when the crawler logs in (before the snapshot) and on no GET;
# they are left out only so a session touched by a message does not count as data.
NOT_DATA = {"sessions.session", "axes.accesslog", "axes.accessattempt", "axes.accessfailurelog"}
SKIP_PREFIXES = ("/static/", "/media/", "/admin/", "/accounts/logout/")
MAX_PAGES = 400


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.hrefs.append(href)


def snapshot() -> dict[str, str]:
    tables = {}
    for model in apps.get_models():
        label = model._meta.label_lower
        if label in NOT_DATA:
            continue
        rows = list(model.objects.order_by("pk").values_list())
        tables[label] = hashlib.sha256(repr(rows).encode()).hexdigest() + f" ({len(rows)} rows)"
    return tables


def crawl(client) -> list[str]:
    seen, queue, visited = {"/"}, deque(["/"]), []
    while queue and len(visited) < MAX_PAGES:
        address = queue.popleft()
        response = client.get(address)
        visited.append(f"{response.status_code} {address}")
        if response.status_code in (301, 302):
            target = urljoin(address, response["Location"])
            if target not in seen and not target.startswith(SKIP_PREFIXES):
                seen.add(target)
                queue.append(target)
            continue
        if not response.get("Content-Type", "").startswith("text/html"):
            continue
        parser = Links()
        parser.feed(response.content.decode())
        for href in parser.hrefs:
            parts = urlsplit(urljoin("http://testserver" + address, href))
            if parts.netloc != "testserver":
                continue
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            if target not in seen and not parts.path.startswith(SKIP_PREFIXES):
                seen.add(target)
                queue.append(target)
    return visited


@pytest.fixture
def demo(settings, fresh_image_indexes, demo_snapshot):
    demo_snapshot.restore(settings)  # seeded once per process, copied in


@pytest.mark.parametrize("username", ["researcher", "reviewer", "annotator"])
def test_following_every_link_changes_no_table(demo, client, username):
    from django.contrib.auth.models import User

    assert username in {name for name, _, _ in DEMO_USERS}
    client.force_login(User.objects.get(username=username))
    before = snapshot()
    visited = crawl(client)
    after = snapshot()
    changed = {
        table: (before.get(table), after.get(table))
        for table in before.keys() | after.keys()
        if before.get(table) != after.get(table)
    }
    assert changed == {}, f"GETs changed tables after visiting {len(visited)} pages"
    assert len(visited) > 10
    assert not [line for line in visited if line.startswith("5")], visited
