"""The demo's release step: built and frozen from what the demo accepted, once."""

import pytest

from exports.demo import add_demo
from exports.models import Release

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]


def test_the_demo_release_is_built_frozen_and_made_once(benchmark, researcher, annotator):
    users = {"researcher": researcher, "annotator": annotator}
    assert add_demo(benchmark, users) == "no release: nothing is accepted yet" and not Release.objects.exists()


def test_the_demo_release_from_accepted_items(benchmark, accepted, researcher, annotator):
    users = {"researcher": researcher, "annotator": annotator}
    said = add_demo(benchmark, users)
    release = Release.objects.get()
    assert release.is_frozen and release.counts["items"] == 22 and "22 items, frozen" in said
    assert add_demo(benchmark, users) == "release 1.0.0 (frozen)" and Release.objects.count() == 1
