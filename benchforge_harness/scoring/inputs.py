"""What the scoring functions take: items, answers, images, and how a question becomes messages.

Items: `benchforge_harness.release.Item` objects, or plain dicts with the same fields (validated the same
way as a line of items.jsonl; see benchforge_harness/release.py).

Images: an item's `images` entries are references that a loader turns into an image. Without a
loader a reference is a file path. A loader is a callable(reference) -> bytes or path, e.g. a
release folder's `release.image_path`, or the platform's `lambda name: storage.open(name).read()`.
A dict item may also carry the images themselves (bytes) or zero-argument callables returning
bytes or a path. Images are read when a request is built, so a large run never holds them all.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from benchforge_harness import llm
from benchforge_harness.io import InputError
from benchforge_harness.release import Item, parse_item

ImageLoader = Callable[[str], "bytes | str | os.PathLike"]


def as_item(value: Item | Mapping[str, Any], where: str = "item") -> Item:
    """An Item from an Item or a dict of items.jsonl fields."""
    if isinstance(value, Item):
        return value
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: expected an Item or a dict of item fields, got {type(value).__name__}")
    row = dict(value)
    images = row.pop("images", None) or []
    if isinstance(row.get("id"), int) and not isinstance(row["id"], bool):
        row["id"] = str(row["id"])
    item = parse_item(row, f"{where} {row.get('id')!r}")
    if not isinstance(images, (list, tuple)):
        raise InputError(f"{where} {item.id!r}: 'images' must be a list")
    for image in images:
        if not (isinstance(image, (str, os.PathLike, bytes, bytearray)) or callable(image)):
            raise InputError(
                f"{where} {item.id!r}: an image must be a path or storage name, bytes, or a callable "
                f"returning either; got {type(image).__name__}"
            )
    return dataclasses.replace(item, images=tuple(images))


def as_items(values: Iterable[Item | Mapping[str, Any]]) -> list[Item]:
    items = [as_item(value, f"item {index}") for index, value in enumerate(values)]
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise InputError(f"duplicate item id {item.id!r}")
        seen.add(item.id)
    return items


def as_answers(predictions: Mapping[str, Mapping[Any, Any]]) -> dict[str, dict[str, str]]:
    """{model: {item id: answer text}}; integer ids become strings, missing answers (None) are left out."""
    answers: dict[str, dict[str, str]] = {}
    for model, by_id in predictions.items():
        answers[str(model)] = {str(item_id): text for item_id, text in by_id.items() if isinstance(text, str)}
    return answers


def item_images(item: Item, loader: ImageLoader | None = None) -> list[llm.Image]:
    """The item's images as llm.user_message takes them (read lazily)."""
    images: list[llm.Image] = []
    for ref in item.images:
        if isinstance(ref, (bytes, bytearray)) or callable(ref):
            images.append(ref)
        elif loader is not None:
            images.append(lambda ref=ref: loader(ref))
        else:
            images.append(ref)
    return images


def check_images(items: Iterable[Item], loader: ImageLoader | None = None) -> None:
    """Fail before the first call when an image file is missing. Images behind a loader of bytes
    (remote storage) or a callable are only read when their request is built."""
    if loader is not None and not getattr(loader, "returns_paths", False):
        return
    for item in items:
        for ref in item.images:
            if isinstance(ref, (str, os.PathLike)):
                path = Path(loader(ref) if loader is not None else ref)
                if not path.is_file():
                    raise InputError(f"item {item.id!r} needs image {path}, which is missing")


def attach_images(
    endpoint: llm.Endpoint, items: list[Item], text_only: bool, role: str, loader: ImageLoader | None = None
) -> bool:
    """Whether to send the items' images; refuses a text-only endpoint unless text_only says that is intended."""
    if text_only or not any(item.images for item in items):
        return False
    if not endpoint.vision:
        raise InputError(
            f"the {role} endpoint {endpoint.name!r} is declared vision = false but the items carry images; "
            "use a vision endpoint, or send the questions without images (--text-only, text_only=True)"
        )
    check_images(items, loader)
    return True


def render_history(history) -> str:
    names = {"user": "User", "assistant": "Assistant"}
    return "\n".join(f"{names[turn['role']]}: {turn['content']}" for turn in history)


def conversation(item: Item, final_question: str, attach_images: bool, loader: ImageLoader | None = None) -> list[dict]:
    """The item's history turns, then `final_question`; images ride on the first user turn."""
    images = item_images(item, loader) if attach_images else []
    messages = []
    for turn in [*item.history, {"role": "user", "content": final_question}]:
        if turn["role"] == "user" and images:
            messages.append(llm.user_message(turn["content"], images=images))
            images = []
        else:
            messages.append(llm.text_message(turn["role"], turn["content"]))
    return messages


def path_loader(resolve: Callable[[str], Path]) -> ImageLoader:
    """Mark a loader that returns file paths (so missing files are reported before any call)."""

    def load(ref: str) -> Path:
        return resolve(ref)

    load.returns_paths = True  # type: ignore[attr-defined]
    return load
