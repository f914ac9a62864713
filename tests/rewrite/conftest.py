"""Fixtures for the rewrite app: accepted seed items, a models file on the loopback LLM server
(GLM through zai-sdk by default), and the default prompt templates."""

import uuid

import pytest

from tests.llm.conftest import KEY_ENV, models_toml

QUESTIONS = [
    "图中有几只猫？",
    "桌子上的杯子是什么颜色？",
    "这张照片是在室内还是室外拍的？",
    "图里的人在做什么？",
    "画面左边的牌子上写着什么？",
]


@pytest.fixture(autouse=True)
def _llm_settings(settings):
    # No Redis unless a test asks: the database cache and the process limiter.
    settings.BENCHFORGE_LLM_CACHE_URL = ""
    settings.BENCHFORGE_LLM_LIMITER_URL = ""
    settings.BENCHFORGE_LLM_REDIS_PREFIX = f"bf-test-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def declare(fake_llm, tmp_path, settings, monkeypatch):
    """declare(name="glm", provider="zhipuai", model="glm-4", **keys): the models file with that
    endpoint (added to those declared before) on the fake server."""
    monkeypatch.setenv(KEY_ENV, "id.secret")
    path = tmp_path / "models.toml"
    declared = {}

    def declare_(name="glm", provider="zhipuai", model="glm-4", **keys):
        table = {
            "provider": provider,
            "base_url": fake_llm.base_url(provider),
            "model": model,
            "api_key_env": KEY_ENV,
            "max_retries": 2,
            "timeout": 5,
        }
        table.update(keys)
        declared[name] = table
        path.write_text(models_toml(declared))
        settings.BENCHFORGE_MODELS = path
        return path

    return declare_


@pytest.fixture
def make_seed(benchmark, counting, annotator):
    from annotation import services
    from annotation.models import Item
    from tests.factories import complete_fields, make_image

    def make(question="图中有几只猫？", *, kind=Item.Kind.SINGLE_TURN, status="accepted", **fields):
        image = make_image(benchmark, tasks=[counting])
        data = complete_fields(image, question=question)
        if kind == Item.Kind.MCQ:
            data.update(choices=["两只", "三只"], answer="B")
        if kind == Item.Kind.MULTI_TURN:
            data.update(history=[{"role": "user", "content": "这是哪里？"}, {"role": "assistant", "content": "一个公园。"}])
        data.update(fields)
        return services.create_item(benchmark, task=counting, user=annotator, kind=kind, status=status, **data)

    return make


@pytest.fixture
def seeds(make_seed):
    return [make_seed(q) for q in QUESTIONS]


@pytest.fixture
def zh_template(benchmark):
    from rewrite import services

    zh, _en = services.ensure_default_templates(benchmark)
    return zh.latest


def five(question: str) -> str:
    """A clean reply: five distinct rewrites of the question, one per line."""
    core = question.rstrip("？?")
    return "\n".join(
        [f"请问{core}？", f"能说说{core}吗？", f"我想知道{core}。", f"麻烦告诉我：{core}？", f"{core}，你看得出来吗？"]
    )


def question_of(body: dict) -> str:
    """The seed question in a request (the first message ends with it)."""
    first = body["messages"][0]["content"]
    return first.rsplit("：", 1)[-1].rsplit("Question: ", 1)[-1]
