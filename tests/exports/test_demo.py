"""The demo's release step: built from what the demo accepted, once."""

import pytest

from exports.demo import add_demo
from exports.models import Release

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]


def test_no_demo_release_without_accepted_items(benchmark, researcher, annotator):
    users = {"researcher": researcher, "annotator": annotator}
    assert add_demo(benchmark, users) == "No release: nothing is accepted yet." and not Release.objects.exists()


def test_the_demo_release_from_accepted_items(benchmark, accepted, researcher, annotator):
    users = {"researcher": researcher, "annotator": annotator}
    said = add_demo(benchmark, users)
    release = Release.objects.get()
    assert release.status == Release.Status.BUILT and release.counts["items"] == 22 and "22 items built" in said
    assert release.files.count() == 5  # both bundles in both formats, and the Parquet export
    assert add_demo(benchmark, users) == "Release 1.0.0 (built (not frozen))." and Release.objects.count() == 1


def test_the_demo_release_follows_the_default_and_leaks_no_test_reference(benchmark, accepted, researcher, annotator):
    import json

    from annotation.withholding import DEFAULT_PRIVATE
    from benchforge_harness.bundle import iter_bytes
    from exports.services import bundle_rows
    from tests.exports.conftest import stored

    add_demo(benchmark, {"researcher": researcher, "annotator": annotator})
    release = Release.objects.get()
    assert release.private == sorted(DEFAULT_PRIVATE)
    public = b"".join(content for _, content in iter_bytes(stored(release, "public.tar.gz")))
    test_rows = [r for r in bundle_rows(release, "private") if r["split"] == "test"]
    assert test_rows
    for row in test_rows:
        assert row["reference_answer"].encode() not in public
        assert not any(c.encode() in public for c in row["criteria"])
    card = json.dumps(dict(iter_bytes(stored(release, "public.zip")))["README.md"].decode())
    assert "test split: withholds answer keys, reference answers and per-sample criteria" in card
