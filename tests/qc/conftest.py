"""Fixtures for QC: a models file on the loopback LLM server, multiple-choice items past review,
and scripted models that know (or do not know) the answers."""

import re
import uuid

import pytest

from tests.llm.conftest import KEY_ENV, models_toml

LETTERS = "ABCD"


@pytest.fixture(autouse=True)
def _llm_settings(settings):
    # The database cache and the process limiter, unless a test asks for Redis.
    settings.BENCHFORGE_LLM_CACHE_URL = ""
    settings.BENCHFORGE_LLM_LIMITER_URL = ""
    settings.BENCHFORGE_LLM_REDIS_PREFIX = f"bf-qc-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def declare(fake_llm, tmp_path, settings, monkeypatch):
    """declare({"name": {"provider": ..., **keys}, ...}): the models file with those endpoints."""
    monkeypatch.setenv(KEY_ENV, "id.secret")
    path = tmp_path / "models.toml"

    def declare_(endpoints: dict[str, dict], provider: str = "openai"):
        tables = {}
        for name, keys in endpoints.items():
            table = {
                "provider": keys.get("provider", provider),
                "base_url": fake_llm.base_url(keys.get("provider", provider)),
                "model": keys.get("model", name),
                "api_key_env": KEY_ENV,
                "max_retries": 0,
                "timeout": 5,
                "max_concurrency": 4,
            }
            table.update({k: v for k, v in keys.items() if k not in ("provider", "model")})
            tables[name] = table
        path.write_text(models_toml(tables))
        settings.BENCHFORGE_MODELS = path
        return path

    return declare_


def question_text(n: int) -> str:
    return f"Question {n}: which of these belongs to the picture?"


def choices_of(n: int, count: int = 4) -> list[str]:
    return [f"thing {n}-{j}" for j in range(count)]


def make_mcq_items(
    benchmark, user, n: int, *, answer: str = "B", images: bool = False, count: int = 4, answers=None, choices=choices_of
):
    """n accepted multiple-choice items (external, as an import leaves them), optionally with an image
    each; choices(i, count) gives item i's option texts."""
    from annotation.services import import_external_items
    from curation.services import ingest_image, screen_images
    from tests.factories import jpeg

    task = benchmark.tasks.first()
    specs = []
    for i in range(n):
        spec = {
            "task": task,
            "external_id": f"q{i}",
            "kind": "mcq",
            "question_type": "closed",
            "question": question_text(i),
            "choices": choices(i, count),
            "answer": (answers[i] if answers else answer),
        }
        if images:
            image = ingest_image(benchmark, jpeg(seed=500 + i, size=(200, 160))).image
            screen_images(benchmark, [image.pk], action="accept", user=user)
            spec["images"] = [image.pk]
        specs.append(spec)
    items, problems = import_external_items(benchmark, specs, user=user)
    assert not problems, problems
    return items


def prompt_of(body: dict) -> str:
    content = body["messages"][-1]["content"]
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if part.get("type") == "text")
    return content


def has_image(body: dict) -> bool:
    return any(
        isinstance(m.get("content"), list) and any(p.get("type") == "image_url" for p in m["content"]) for m in body["messages"]
    )


def knower(known: set[int], answers: dict[int, str] | None = None, *, default_answer: str = "B"):
    """A model that picks the right option of the items numbered in `known` and a wrong one otherwise."""

    def reply(body: dict) -> str:
        text = prompt_of(body)
        n = int(re.search(r"Question (\d+):", text).group(1))
        options = dict(re.findall(r"^([A-D])\. (.*)$", text, re.M))
        right = choices_of(n, len(options))[LETTERS.index((answers or {}).get(n, default_answer))]
        if n in known:
            return next(letter for letter, t in options.items() if t == right)
        return next(letter for letter, t in options.items() if t != right)

    return reply
