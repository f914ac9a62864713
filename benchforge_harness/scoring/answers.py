"""Answering the open questions with a model under test (what `infer` writes as predictions)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from benchforge_harness import llm
from benchforge_harness.calls import OK, Call, RunStats, Sink, send_calls
from benchforge_harness.io import InputError
from benchforge_harness.release import Item
from benchforge_harness.scoring.inputs import ImageLoader, as_items, attach_images, conversation


def answer_questions(
    client,
    model: str,
    items: Iterable[Item | Mapping[str, Any]],
    *,
    sink: Sink,
    text_only: bool = False,
    image_loader: ImageLoader | None = None,
    limit: int | None = None,
    **run,
) -> tuple[dict[str, str], RunStats]:
    """Ask `model` every open (not multiple-choice) question: earlier turns as history, images
    inline with the first user turn. Rows go to the sink keyed by item id ({"id", "model",
    "status", "answer" | "error"}). Returns ({item id: answer} of the answered items, stats)."""
    open_items = [item for item in as_items(items) if not item.is_mcq][:limit]
    if not open_items:
        raise InputError("no open (non multiple-choice) questions to answer")
    if model not in client.endpoints:
        declared = ", ".join(sorted(client.endpoints)) or "none"
        raise llm.ConfigError(f"no endpoint named {model!r} in the models file (declared: {declared})")
    attach = attach_images(client.endpoints[model], open_items, text_only, "model", image_loader)
    calls = [
        Call(
            key=item.id,
            build=lambda item=item: conversation(item, item.question, attach, image_loader),
            meta={"id": item.id, "model": model},
            parse=lambda text: {"answer": text},
        )
        for item in open_items
    ]
    stats = send_calls(
        client, model, calls, sink, label=f"infer {model}", parse_retries=0, keep_outputs=False, with_images=attach, **run
    )
    answers = {key: row["answer"] for key, row in stats.rows.items() if row["status"] == OK}
    return answers, stats
