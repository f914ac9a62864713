"""Usage and cost: a rough estimate before a run, the price of what a run used after it.

Prices come from the models file (input_cost_per_mtok, output_cost_per_mtok: per million
tokens, in any currency unit; an endpoint without them has no cost, None, not 0).

The estimate is deliberately simple and provider-independent, meant for "about how much will
this job cost", not for billing:
  * text: one token per 4 characters of Latin-script text (letters, digits, spaces,
    punctuation), one token per CJK character (Chinese, Japanese kana, Korean), other scripts
    at one token per 2 characters;
  * IMAGE_TOKENS per image (providers charge between ~85 and ~1,600 for one image, depending
    on its size and detail; pass image_tokens= to match an endpoint you know);
  * MESSAGE_OVERHEAD tokens per message for the chat format;
  * completion: the expected_completion_tokens the caller passes (a judge's JSON verdict is
    ~60-150 tokens, a model's free answer a few hundred).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from .endpoints import Endpoint

IMAGE_TOKENS = 1000
MESSAGE_OVERHEAD = 4
DEFAULT_COMPLETION_TOKENS = 256


def _is_cjk(code: int) -> bool:
    return (
        0x3040 <= code <= 0x30FF
        or 0x3400 <= code <= 0x4DBF
        or 0x4E00 <= code <= 0x9FFF
        or 0xAC00 <= code <= 0xD7AF
        or 0xF900 <= code <= 0xFAFF
        or 0xFF00 <= code <= 0xFFEF
        or 0x3000 <= code <= 0x303F
        or 0x20000 <= code <= 0x2FA1F
    )


def estimate_text_tokens(text: str) -> int:
    """Rough token count of a text (see the module docstring)."""
    latin = cjk = other = 0
    for char in text:
        code = ord(char)
        if code < 0x250:
            latin += 1
        elif _is_cjk(code):
            cjk += 1
        else:
            other += 1
    return math.ceil(latin / 4) + cjk + math.ceil(other / 2)


def estimate_prompt_tokens(messages: Iterable[Mapping], *, image_tokens: int = IMAGE_TOKENS) -> int:
    """Rough prompt tokens of one request's messages (text parts, images, chat overhead)."""
    total = 0
    for message in messages:
        total += MESSAGE_OVERHEAD
        content = message.get("content")
        if isinstance(content, str):
            total += estimate_text_tokens(content)
        elif isinstance(content, list):
            for part in content:
                if not isinstance(part, Mapping):
                    continue
                if part.get("type") == "image_url":
                    total += image_tokens
                elif isinstance(part.get("text"), str):
                    total += estimate_text_tokens(part["text"])
    return total


def estimate_usage(
    requests: Iterable[Iterable[Mapping]],
    *,
    expected_completion_tokens: int = DEFAULT_COMPLETION_TOKENS,
    image_tokens: int = IMAGE_TOKENS,
) -> dict:
    """Estimated usage of a batch of requests (each a list of messages), every one paid:
    {"calls", "prompt_tokens", "completion_tokens"}."""
    calls = prompt = 0
    for messages in requests:
        calls += 1
        prompt += estimate_prompt_tokens(messages, image_tokens=image_tokens)
    return {"calls": calls, "prompt_tokens": prompt, "completion_tokens": calls * expected_completion_tokens}


def cost(endpoint: Endpoint, usage: Mapping) -> float | None:
    """What `usage` ({"prompt_tokens", "completion_tokens"}, e.g. LLMClient.usage[name] or
    estimate_usage(...)) costs at the endpoint's prices; None when the endpoint declares none.
    A missing price of the two counts as 0 only when the other is declared."""
    if endpoint.input_cost_per_mtok is None and endpoint.output_cost_per_mtok is None:
        return None
    prompt = usage.get("prompt_tokens", 0) or 0
    completion = usage.get("completion_tokens", 0) or 0
    return (prompt * (endpoint.input_cost_per_mtok or 0.0) + completion * (endpoint.output_cost_per_mtok or 0.0)) / 1_000_000
