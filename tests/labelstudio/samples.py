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
    """Save an annotation through Label Studio's API with only the regions given (`by`: the Label
    Studio user id it is saved for, default the account of the token)."""
    body = {"result": list(regions), "lead_time": 2.5}
    if by is not None:
        body["completed_by"] = by
    response = api.post(f"/api/tasks/{task_id}/annotations/", json=body)
    response.raise_for_status()
    return response.json()


def label_studio_user(api, username: str) -> dict:
    """A second Label Studio account (an annotator of the team), created through the API."""
    email = f"{username}@example.com"
    response = api.post("/api/users/", json={"email": email, "username": username, "first_name": username.capitalize()})
    if response.status_code == 400:  # a server kept between test runs has them already
        found = [u for u in api.get("/api/users/").raise_for_status().json() if u["email"] == email]
        if found:
            return found[0]
    response.raise_for_status()
    return response.json()


def prefill_of(api, task_id: int) -> dict:
    """The task's benchforge pre-annotation as Label Studio holds it now: {"id", "result", ...}."""
    found = api.get("/api/predictions/", params={"task": task_id}).raise_for_status().json()
    return next(p for p in found if p["model_version"] == "benchforge")


def annotate_in_editor(api, task_id: int, changes: dict, *, prefill: dict | None = None, by: int | None = None, lead_time=3.0):
    """Save an annotation the way Label Studio's editor does: started from a pre-annotation (the
    task's current one unless `prefill` names an older one, kept by the test), every region of it
    submitted, untouched ones with origin "prediction", the changed or added ones ("from_name":
    value) with origin "prediction-changed" or "manual". An older pre-annotation no longer exists
    in Label Studio (a refresh replaced it), so the annotation names none, as then."""
    current = prefill_of(api, task_id)
    prefill = prefill or current
    result = []
    for found in prefill["result"]:
        name = found["from_name"]
        if name in changes:
            result.append({**region(name, changes[name]), "origin": "prediction-changed"})
        else:
            result.append({**found, "origin": "prediction"})
    shown = {r["from_name"] for r in prefill["result"]}
    result += [{**region(name, value), "origin": "manual"} for name, value in changes.items() if name not in shown]
    body = {"result": result, "lead_time": lead_time}
    if prefill["id"] == current["id"]:
        body["parent_prediction"] = prefill["id"]
    if by is not None:
        body["completed_by"] = by
    response = api.post(f"/api/tasks/{task_id}/annotations/", json=body)
    response.raise_for_status()
    return response.json()
