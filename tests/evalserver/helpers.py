import json

from django.core.files.uploadedfile import SimpleUploadedFile


def lines(window, *, model="team-vlm", answer="Three apples.", extra=()) -> bytes:
    rows = [{"id": key, "model": model, "answer": answer} for key in window.items]
    return "".join(json.dumps(row) + "\n" for row in [*rows, *extra]).encode()


def upload(data: bytes, name="predictions.jsonl") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/jsonl")
