"""Chat messages: text turns and user turns with inline (base64) images."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..io import InputError
from .endpoints import Endpoint
from .errors import LLMError

ROLES = ("system", "user", "assistant")
# An image: its bytes, a file path, or a zero-argument callable returning either.
Image = bytes | str | os.PathLike | Callable[[], bytes | str | os.PathLike]

_IMAGE_SIGNATURES = (
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
)


def sniff_image_mime(data: bytes) -> str | None:
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    for signature, mime in _IMAGE_SIGNATURES:
        if data.startswith(signature):
            return mime
    return None


def image_data_url(image: Image) -> str:
    """An image as a base64 data URL; the MIME type comes from the bytes. The image is its bytes,
    a file path, or a callable returning either (for images in remote storage: read when the
    message is built, not before)."""
    if callable(image):
        image = image()
    if isinstance(image, (bytes, bytearray, memoryview)):
        data, label = bytes(image), f"image bytes ({len(image)} bytes)"
    elif isinstance(image, (str, os.PathLike)):
        label = str(image)
        try:
            data = Path(image).read_bytes()
        except OSError as exc:
            raise InputError(f"{label}: cannot read the image ({exc.strerror})") from None
    else:
        raise InputError(f"an image must be bytes, a file path or a callable returning one, got {type(image).__name__}")
    mime = sniff_image_mime(data)
    if mime is None:
        raise InputError(f"{label}: not a JPEG, PNG, GIF, WEBP or BMP image (starts with {data[:8]!r})")
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def text_message(role: str, text: str) -> dict:
    if role not in ROLES:
        raise ValueError(f"role {role!r}: expected one of {', '.join(ROLES)}")
    if not isinstance(text, str):
        raise TypeError(f"message text must be a str, got {type(text).__name__}")
    return {"role": role, "content": text}


def user_message(text: str, images: Iterable[Image] | Image = ()) -> dict:
    """A user turn; images (see image_data_url) go before the text as OpenAI-style image_url parts."""
    if isinstance(images, (bytes, bytearray, memoryview, str, os.PathLike)) or callable(images):
        images = [images]
    message = text_message("user", text)
    parts = [{"type": "image_url", "image_url": {"url": image_data_url(image)}} for image in images]
    if parts:
        message["content"] = parts + [{"type": "text", "text": text}]
    return message


def has_images(messages: list[dict]) -> bool:
    return any(
        isinstance(part, dict) and part.get("type") == "image_url"
        for message in messages
        if isinstance(message.get("content"), list)
        for part in message["content"]
    )


def check_messages(endpoint: Endpoint, messages: Any) -> None:
    def fail(problem: str) -> None:
        raise LLMError(f"{endpoint.label}: {problem}", endpoint=endpoint.name)

    if not isinstance(messages, list) or not messages:
        fail("messages must be a non-empty list of {'role', 'content'} dicts (use user_message/text_message)")
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            fail(f"message {index} must be a dict with role one of {', '.join(ROLES)}")
        if not isinstance(message.get("content"), (str, list)):
            fail(f"message {index} content must be text or a list of content parts")
    if not endpoint.vision and has_images(messages):
        fail("declared vision = false, so it cannot take images; send text only or use a vision endpoint")
