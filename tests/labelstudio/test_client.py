"""The adapter and the client (label-studio-sdk underneath) against the real Label Studio server
(no benchforge models needed)."""

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


def region(name, kind, value):
    key = "text" if kind == "textarea" else "choices"
    return {"from_name": name, "to_name": "question", "type": kind, "value": {key: [value]}}


class Recording(httpx.HTTPTransport):
    """The real transport, noting each request's path and Authorization header."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def handle_request(self, request):
        self.seen.append((request.method, request.url.path, request.headers.get("authorization", "")))
        return super().handle_request(request)


def test_generated_config_and_tasks_are_accepted_and_annotations_read_back(labelstudio_server):
    with LabelStudioClient(labelstudio_server.url, labelstudio_server.token) as client:
        client.check()
        config = ls.labeling_config(**ls.config_sections(PAYLOADS))
        project = client.create_project(title="adapter check", label_config=config, instructions="<p>Check each item.</p>")
        assert client.get_project(project["id"])["label_config"] == config
        task_ids = client.import_tasks(project["id"], [ls.task_for_item(p, image_src=data_src) for p in PAYLOADS])
        assert len(set(task_ids)) == 4

        listed = {t["meta"]["benchforge_item"]: t for t in client.iter_tasks(project["id"])}
        assert sorted(listed) == [1, 2, 3, 4]
        assert set(listed[2]) == {"id", "meta", "total_annotations"}  # only what was asked for: no inline images
        with_data = {t["id"]: t for t in client.iter_tasks(project["id"], include="id,data")}
        images = with_data[listed[2]["id"]]["data"]["images"]
        assert [u[:22] for u in images] == ["data:image/png;base64,"] * 2 and images[0] != images[1]

        result = [
            region("reference_answer", "textarea", "Four bars"),
            region("criterion_1_kind", "choices", "Exact reference"),
            region("criterion_1_text", "textarea", "says four"),
            region("verdict", "choices", "OK"),
        ]
        with as_annotator(labelstudio_server) as annotator:
            saved = annotator.post(f"/api/tasks/{listed[2]['id']}/annotations/", json={"result": result})
            saved.raise_for_status()

        # One paged listing holds every task's annotations (results included) and pre-fill, not its data.
        work = {t["id"]: t for t in client.iter_tasks_with_work(project["id"])}
        assert "data" not in work[listed[2]["id"]]
        [annotation] = ls.latest_per_annotator(work[listed[2]["id"]]["annotations"])
        # Plain JSON as the server sent it: the timestamp string is what a later pull compares.
        assert annotation["id"] == saved.json()["id"] and annotation["updated_at"] == saved.json()["updated_at"]
        assert [p["model_version"] for p in work[listed[2]["id"]]["predictions"]] == [ls.PREDICTION_MODEL_VERSION]
        answer = ls.parse_result(listed[2]["id"], annotation["result"])
        assert answer.verdict == "ok"
        values = ls.field_values(TWO_IMAGES)
        given = ls.given_values(answer, task_id=listed[2]["id"], kind=TWO_IMAGES["kind"])
        merged = ls.merge(values, values, ls.proposals(given, values))
        assert ls.item_changes(values, {**values, **merged.apply}, task_id=listed[2]["id"]) == {
            "reference_answer": "Four bars",
            "criteria": [{"kind": "exact", "text": "says four"}],
        }
        assert [t["total_annotations"] for t in client.iter_tasks(project["id"]) if t["id"] == listed[2]["id"]] == [1]

        client.update_project(project["id"], label_config=ls.labeling_config(with_history=True, with_options=True))
        assert "options" in client.get_project(project["id"])["label_config"]


def test_paging_through_more_tasks_than_one_page(labelstudio_server, monkeypatch):
    monkeypatch.setattr(LabelStudioClient, "PAGE_SIZE", 2)
    with LabelStudioClient(labelstudio_server.url, labelstudio_server.token) as client:
        project = client.create_project(title="paging", label_config=ls.labeling_config(with_history=False, with_options=False))
        tasks = [ls.task_for_item({**SINGLE, "id": n, "images": []}, image_src=data_src) for n in range(5)]
        client.import_tasks(project["id"], tasks)
        assert sorted(t["meta"]["benchforge_item"] for t in client.iter_tasks(project["id"])) == [0, 1, 2, 3, 4]


def test_listing_many_tasks_at_the_default_page_size(labelstudio_server):
    with LabelStudioClient(labelstudio_server.url, labelstudio_server.token) as client:
        config = ls.labeling_config(with_history=False, with_options=False)
        project = client.create_project(title="many tasks", label_config=config)
        count = 2 * LabelStudioClient.PAGE_SIZE + 31
        tasks = [ls.task_for_item({**SINGLE, "id": n, "images": []}, image_src=data_src) for n in range(count)]
        assert len(client.import_tasks(project["id"], tasks)) == count
        assert client.get_project(project["id"])["task_number"] == count
        listed = [t["meta"]["benchforge_item"] for t in client.iter_tasks(project["id"], include="id,meta")]
        assert sorted(listed) == list(range(count))


def test_bad_token_is_a_clear_error_naming_the_variable(labelstudio_server):
    with LabelStudioClient(labelstudio_server.url, "0" * 40, token_env="LABEL_STUDIO_API_KEY") as client:
        with pytest.raises(LabelStudioError) as caught:
            client.check()
    assert caught.value.code == "labelstudio_auth"
    assert "refused the access token (HTTP 401" in caught.value.message
    assert "LABEL_STUDIO_API_KEY" in caught.value.message


def test_legacy_token_is_sent_as_is(labelstudio_server):
    transport = Recording()
    with LabelStudioClient(labelstudio_server.url, labelstudio_server.token, transport=transport) as client:
        client.check()
    assert transport.seen == [("GET", "/api/projects/", f"Token {labelstudio_server.token}")]


@pytest.fixture(scope="module")
def personal_token(labelstudio_server) -> dict:
    """{"token": the account's current personal access token} (Label Studio allows one at a time)."""
    with as_annotator(labelstudio_server) as legacy:
        created = legacy.post("/api/token/")
        created.raise_for_status()
        return {"token": created.json()["token"]}


def test_personal_access_token_is_exchanged_for_access_tokens(labelstudio_server, personal_token):
    personal = personal_token["token"]
    transport = Recording()
    with LabelStudioClient(labelstudio_server.url, personal, transport=transport) as client:
        client.check()
        client.check()
    (refresh, first, second) = transport.seen
    assert refresh[:2] == ("POST", "/api/token/refresh/")
    assert first[1] == second[1] == "/api/projects/"
    # The refresh token itself never goes out as a credential; one access token serves both calls.
    assert first[2].startswith("Bearer ") and first[2] == second[2] and personal not in first[2]


def test_a_revoked_personal_access_token_is_a_clear_error(labelstudio_server, personal_token):
    revoked = personal_token["token"]
    with as_annotator(labelstudio_server) as legacy:  # rotating blacklists the old token
        rotated = legacy.post("/api/token/rotate/", json={"refresh": revoked})
        rotated.raise_for_status()
        personal_token["token"] = rotated.json()["refresh"]
    with LabelStudioClient(labelstudio_server.url, revoked, token_env="LABEL_STUDIO_TEAM") as client:
        with pytest.raises(LabelStudioError) as caught:
            client.check()
    assert caught.value.code == "labelstudio_auth" and "LABEL_STUDIO_TEAM" in caught.value.message
    assert "refused the access token (HTTP 401: Token is blacklisted)" in caught.value.message
    with LabelStudioClient(labelstudio_server.url, personal_token["token"]) as client:
        client.check()
