"""Item payloads in the shape of annotation.selectors.item_payload, for adapter tests that need
no database, and tiny images to put in them."""

import io

from PIL import Image


def png_bytes(color: str, size=(48, 32)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, "PNG")
    return buffer.getvalue()


def payload(item_id: int, **fields) -> dict:
    base = {
        "id": item_id,
        "benchmark": "demo",
        "task": "chart-reading",
        "category": "Perception / Charts",
        "kind": "single_turn",
        "question_type": "open",
        "question": f"What does chart {item_id} show?",
        "history": [],
        "incoherent": False,
        "hint": "",
        "choices": [],
        "answer": "",
        "reference_answer": "",
        "criteria": [],
        "description": "",
        "images": [{"id": 100 + item_id, "sha256": "ab" * 32, "url": f"/media/{item_id}.png", "width": 48, "height": 32}],
        "seed_id": None,
        "external_id": "",
        "status": "draft",
        "version": 1,
    }
    base.update(fields)
    return base


SINGLE = payload(1, reference_answer="Rising sales", criteria=[{"kind": "soft", "text": "mentions growth"}])
TWO_IMAGES = payload(
    2,
    images=[
        {"id": 201, "sha256": "cd" * 32, "url": "/media/a.png", "width": 48, "height": 32},
        {"id": 202, "sha256": "ef" * 32, "url": "/media/b.png", "width": 48, "height": 32},
    ],
    question="Which of the two charts has more bars?",
)
MCQ = payload(3, kind="mcq", question_type="closed", hint="Count carefully", choices=["3", "4", "5"], answer="B")
MULTI_TURN = payload(
    4,
    kind="multi_turn",
    history=[
        {"role": "user", "content": "What is in the picture?"},
        {"role": "assistant", "content": "A bar chart of sales."},
    ],
    question="Which year had the highest sales?",
)


def region(name: str, value: str) -> dict:
    """One region of an annotation result, for a field of our labeling config."""
    textareas = ("reference_answer", "edit_question", "edit_options", "description")
    kind = "textarea" if name.endswith("_text") or name in textareas else "choices"
    key = "text" if kind == "textarea" else "choices"
    return {"from_name": name, "to_name": "question", "type": kind, "value": {key: [value]}}


def annotate(api, task_id: int, *regions, by: int | None = None) -> dict:
    """Save an annotation through Label Studio's API, as its editor does for an annotator (`by`:
    the Label Studio user id it is saved for, default the account of the token)."""
    body = {"result": list(regions), "lead_time": 12.5}
    if by is not None:
        body["completed_by"] = by
    response = api.post(f"/api/tasks/{task_id}/annotations/", json=body)
    response.raise_for_status()
    return response.json()


def label_studio_user(api, username: str) -> dict:
    """A second Label Studio account (an annotator of the team), created through the API."""
    response = api.post(
        "/api/users/",
        json={"email": f"{username}@example.com", "username": username, "first_name": username.capitalize()},
    )
    response.raise_for_status()
    return response.json()
