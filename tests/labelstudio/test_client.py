"""The adapter and client against the real Label Studio server (no benchforge models needed)."""

import httpx
import pytest

from labelstudio import adapter as ls
from labelstudio.client import LabelStudioClient, LabelStudioError

from .samples import MCQ, MULTI_TURN, SINGLE, TWO_IMAGES, png_bytes

pytestmark = pytest.mark.labelstudio

PAYLOADS = [SINGLE, TWO_IMAGES, MCQ, MULTI_TURN]


def as_annotator(server) -> httpx.Client:
    """Label Studio's API used directly, the way an annotator's editor saves an annotation."""
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Token {server.token}"}, timeout=30)


def data_src(image):
    return ls.data_url(png_bytes(["red", "green", "blue"][image["id"] % 3]), "PNG")


def test_generated_config_and_tasks_are_accepted_and_annotations_read_back(labelstudio_server):
    with LabelStudioClient(labelstudio_server.url, labelstudio_server.token) as client:
        client.check()
        config = ls.labeling_config(**ls.config_sections(PAYLOADS))
        project = client.create_project(title="adapter check", label_config=config, instructions="<p>Check each item.</p>")
        task_ids = client.import_tasks(project["id"], [ls.task_for_item(p, image_src=data_src) for p in PAYLOADS])
        assert len(set(task_ids)) == 4

        listed = {t["meta"]["benchforge_item"]: t for t in client.iter_tasks(project["id"])}
        assert sorted(listed) == [1, 2, 3, 4]
        two_images = client.request("GET", f"/api/tasks/{listed[2]['id']}/")
        assert [u[:22] for u in two_images["data"]["images"]] == ["data:image/png;base64,"] * 2
        assert two_images["data"]["images"][0] != two_images["data"]["images"][1]

        result = [
            {"from_name": "reference_answer", "to_name": "question", "type": "textarea", "value": {"text": ["Four bars"]}},
            {"from_name": "criterion_1_kind", "to_name": "question", "type": "choices", "value": {"choices": ["Exact reference"]}},
            {"from_name": "criterion_1_text", "to_name": "question", "type": "textarea", "value": {"text": ["says four"]}},
            {"from_name": "verdict", "to_name": "question", "type": "choices", "value": {"choices": ["OK"]}},
        ]
        with as_annotator(labelstudio_server) as annotator:
            annotator.post(f"/api/tasks/{listed[2]['id']}/annotations/", json={"result": result}).raise_for_status()

        annotation = ls.latest_annotation(client.task_annotations(listed[2]["id"]))
        answer = ls.parse_result(listed[2]["id"], annotation["result"])
        assert answer.verdict == "ok"
        assert ls.item_changes(TWO_IMAGES, answer, task_id=listed[2]["id"]) == {
            "reference_answer": "Four bars", "criteria": [{"kind": "exact", "text": "says four"}],
        }
        assert [t["total_annotations"] for t in client.iter_tasks(project["id"]) if t["id"] == listed[2]["id"]] == [1]


def test_paging_through_more_tasks_than_one_page(labelstudio_server, monkeypatch):
    monkeypatch.setattr(LabelStudioClient, "PAGE_SIZE", 2)
    with LabelStudioClient(labelstudio_server.url, labelstudio_server.token) as client:
        project = client.create_project(title="paging", label_config=ls.labeling_config(with_history=False, with_options=False))
        tasks = [ls.task_for_item({**SINGLE, "id": n, "images": []}, image_src=data_src) for n in range(5)]
        client.import_tasks(project["id"], tasks)
        assert sorted(t["meta"]["benchforge_item"] for t in client.iter_tasks(project["id"])) == [0, 1, 2, 3, 4]


def test_bad_token_is_a_clear_error_naming_the_variable(labelstudio_server):
    with LabelStudioClient(labelstudio_server.url, "0" * 40, token_env="LABEL_STUDIO_API_KEY") as client:
        with pytest.raises(LabelStudioError) as caught:
            client.check()
    assert caught.value.code == "labelstudio_auth"
    assert "refused the access token (HTTP 401" in caught.value.message
    assert "LABEL_STUDIO_API_KEY" in caught.value.message


def test_personal_access_token_is_exchanged_for_access_tokens(labelstudio_server):
    with as_annotator(labelstudio_server) as legacy:
        personal = legacy.post("/api/token/").json()["token"]
    with LabelStudioClient(labelstudio_server.url, personal) as client:
        client.check()
        assert client._auth.startswith("Bearer ")
