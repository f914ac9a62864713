"""The seeded demo as the browser tests of this folder use it: its people by username, and the
passwords they log in with."""

import pytest

from demo.management.commands.seed_demo import DEMO_USERS

PASSWORDS = {name: password for name, _, password in DEMO_USERS}


@pytest.fixture
def demo(settings, fresh_image_indexes, live_demo_snapshot):
    # The demo as seed_demo makes it in these (live server) tests, seeded once per process and
    # copied in (tests/factories.py's DemoSnapshot).
    return live_demo_snapshot.restore(settings)
