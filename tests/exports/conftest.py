"""Fixtures for releases: accepted items (seed groups and MCQ items) and a release built from them."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.files.storage import default_storage

from annotation.models import Item
from annotation.services import create_item, submit_item, update_item
from exports import services
from exports.models import Release
from tests.factories import ACCEPTED_ITEMS, complete_fields, jpeg
from tests.llm.conftest import _llm_settings, declare  # noqa: F401 - the models file on the loopback server

REFERENCE = "There are exactly three red apples on the wooden table, SECRET-REFERENCE-{n}."
CRITERION = "SECRET-CRITERION-{n}: the count is three."


def accept_items(benchmark, annotator, researcher, counting) -> list[Item]:
    """6 seeds with 2 rewrites each in counting, 4 MCQ seeds in OCR, all accepted."""
    from curation.services import ingest_image, screen_images

    ocr = benchmark.tasks.get(slug="ocr")
    items = []
    for n in range(10):
        task = counting if n < 6 else ocr
        image = ingest_image(benchmark, jpeg(9100 + n), tasks=[task]).image
        screen_images(benchmark, [image.pk], action="accept", user=researcher)
        fields = complete_fields(
            image, reference_answer=REFERENCE.format(n=n), criteria=[{"kind": "exact", "text": CRITERION.format(n=n)}]
        )
        if n >= 6:
            fields.update(kind="mcq", choices=["one", "two", "three"], answer="C", question=f"How many? ({n})")
        item = create_item(benchmark, task=task, user=annotator, assignee=annotator)
        item = update_item(item, fields, expected_version=item.version, user=annotator)
        item = submit_item(item, user=annotator)
        items.append(item)
        for k in range(2 if n < 6 else 0):
            rewrite = create_item(benchmark, task=task, user=annotator, seed=item, question=f"Rewrite {k} of {n}")
            items.append(rewrite)
    Item.objects.filter(pk__in=[i.pk for i in items]).update(status="accepted")
    return items


@pytest.fixture
def accepted(request, benchmark, annotator, researcher, counting):
    """Accepted items (`accept_items`), as saved. In most tests they were copied in with the benchmark
    and its people, made once per process (tests/conftest.py's `benchmark`): the same rows."""
    copied = request.node.stash.get(ACCEPTED_ITEMS, None)
    if copied is None:
        copied = [item.pk for item in accept_items(benchmark, annotator, researcher, counting)]
    items = Item.objects.in_bulk(copied)  # read back either way: every test sees them as saved
    return [items[pk] for pk in copied]


@pytest.fixture
def built(benchmark, researcher, accepted, django_capture_on_commit_callbacks):
    def build(version="1.0.0", **kwargs):
        release = services.create_release(benchmark, user=researcher, version=version, **kwargs)
        with django_capture_on_commit_callbacks(execute=True):
            services.start_build(release, user=researcher)
        release.refresh_from_db()
        assert release.status == Release.Status.BUILT, release.job.message
        return release

    return build


def stored(release, kind) -> Path:
    return Path(default_storage.path(release.files.get(kind=kind).storage_name))


# The wheels of the harness's openai extra that `make setup` saves: a clean virtualenv installs from them offline.
WHEELHOUSE = Path(sys.prefix) / "wheelhouse"


def code_block(markdown: str, after: str) -> list[str]:
    """The command lines of the first ``` block after the heading or text `after`, comments dropped."""
    text = markdown[markdown.index(after) :]
    block = text.split("```", 2)[1]
    lines = [line.split("  #")[0].rstrip() for line in block.splitlines()[1:]]
    return [line for line in lines if line]


def clean_machine(tmp_path: Path) -> dict:
    """The environment of a machine with only Python: `python` on the PATH is a bare interpreter (no
    site packages of this one), pip never goes online (the wheelhouse stands in for the index)."""
    bare = tmp_path / "bare-python"
    bare.mkdir(exist_ok=True)
    if not (bare / "python").exists():
        (bare / "python").symlink_to(getattr(sys, "_base_executable", sys.executable))
    return {
        "PATH": f"{bare}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(WHEELHOUSE),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }


def run_as_shown(lines: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-e", "-c", "\n".join(lines)], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
