import os

import httpx
import pytest

from annotation.services import create_item
from curation import services as curation
from tests.conftest import require
from tests.factories import jpeg

from .server import TOKEN, LabelStudioServer, server_executable, start_server


@pytest.fixture(scope="session")
def labelstudio_server(tmp_path_factory):
    """One real Label Studio server for the whole test session (first start ~30-40 s), or the one
    already running at BENCHFORGE_TEST_LABEL_STUDIO_URL (started with tests/labelstudio/server.py's
    account and token: saves the start when running a few tests again and again)."""
    running = os.environ.get("BENCHFORGE_TEST_LABEL_STUDIO_URL")
    if running:
        yield LabelStudioServer(running.rstrip("/"), TOKEN, None, None, 0.0)
        return
    exe = server_executable()
    require(exe is not None, "the Label Studio server (bash tests/labelstudio/install.sh)")
    try:
        server = start_server(exe, tmp_path_factory.mktemp("labelstudio"))
    except RuntimeError as exc:
        pytest.fail(str(exc))
    print(f"\nLabel Studio started at {server.url} in {server.started_in_s:.1f} s")
    yield server
    server.stop()


@pytest.fixture
def _fresh_indexes():
    # Test transactions roll back and SQLite reuses ids: start from empty near-dup caches.
    curation.image_indexes.forget()
    curation.known_index.forget()


@pytest.fixture
def ls_env(labelstudio_server, monkeypatch):
    monkeypatch.setenv("LABEL_STUDIO_URL", labelstudio_server.url)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", labelstudio_server.token)
    return labelstudio_server


@pytest.fixture
def annotator_api(labelstudio_server):
    """Label Studio's own API, used the way its editor saves an annotator's work."""
    headers = {"Authorization": f"Token {labelstudio_server.token}"}
    with httpx.Client(base_url=labelstudio_server.url, headers=headers, timeout=30) as api:
        yield api


@pytest.fixture
def items(_fresh_indexes, benchmark, researcher):
    chart = benchmark.tasks.get(slug="chart")
    images = []
    for seed in range(5):
        image = curation.ingest_image(benchmark, jpeg(seed=seed * 7 + 1), original_name=f"{seed}.jpg", tasks=[chart]).image
        images.append(image)
    curation.screen_images(benchmark, [i.pk for i in images], action="accept", user=researcher)

    def make(images_, **fields):
        return create_item(benchmark, task=chart, user=researcher, images=[i.pk for i in images_], **fields)

    return {
        "single": make(
            images[:1],
            question="What trend does the chart show?",
            reference_answer="Sales rise.",
            criteria=[{"kind": "soft", "text": "Says that sales rise."}],
        ),
        "two_images": make(
            images[1:3],
            question="Which chart has more bars?",
            reference_answer="The left one.",
            criteria=[{"kind": "exact", "text": "Left."}],
        ),
        "mcq": make(
            images[3:4],
            kind="mcq",
            question_type="closed",
            question="How many bars?",
            choices=["3", "4", "5"],
            answer="B",
            reference_answer="B. 4",
            criteria=[{"kind": "exact", "text": "B"}],
        ),
        "multi_turn": make(
            images[4:5],
            kind="multi_turn",
            question="And which year was highest?",
            history=[{"role": "user", "content": "What is this?"}, {"role": "assistant", "content": "A sales chart."}],
            reference_answer="2023.",
            criteria=[{"kind": "exact", "text": "2023"}],
        ),
    }
