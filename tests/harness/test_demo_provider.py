"""The built-in demo provider (provider = "demo"): offline, no key, deterministic replies in the
format each stage's prompt asks for, read by the harness's own parsers, at three qualities."""

import pytest

from benchforge_harness.llm import ConfigError, Endpoint, LLMClient, load_endpoints, text_message
from benchforge_harness.mcq import circular_passes, format_options, parse_extractor_reply
from benchforge_harness.parsing import ANSWER1, parse_rating, parse_score_pair, parse_vote
from benchforge_harness.prompts import Prompts

NAMES = ["demo-strong", "demo-fair", "demo-weak", "demo-judge"]


@pytest.fixture
def client(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    endpoints = {n: Endpoint(name=n, provider="demo", base_url=None, model=n, vision=True) for n in NAMES}
    with LLMClient(endpoints) as c:
        yield c


def ask(client, name, text):
    return client.chat(name, [text_message("user", text)]).text


def test_a_models_file_declares_a_demo_endpoint_without_url_or_key(tmp_path):
    path = tmp_path / "models.toml"
    path.write_text('[models.demo-strong]\nprovider = "demo"\nmodel = "demo-strong"\n')
    endpoint = load_endpoints(path)["demo-strong"]
    assert endpoint.is_demo and "demo" in endpoint.label and endpoint.api_key() == ""
    LLMClient({"demo-strong": endpoint}).check(["demo-strong"])  # no key, no SDK: nothing to complain about
    path.write_text('[models.x]\nprovider = "demo"\nmodel = "m"\nbase_url = "https://api.example.com/v1"\n')
    with pytest.raises(ConfigError, match="offline"):
        load_endpoints(path)


def test_a_real_provider_still_needs_its_key_variable(tmp_path):
    path = tmp_path / "models.toml"
    path.write_text('[models.gpt]\nprovider = "openai"\nmodel = "gpt-x"\n')
    with pytest.raises(ConfigError, match="missing api_key_env"):
        load_endpoints(path)


def test_multiple_choice_answers_vary_with_quality_and_survive_circular_eval(client):
    template = Prompts().get("mcq_question", "en")
    choices = {"A": "Blue", "B": "Red", "C": "Green", "D": "Yellow"}
    solved = {}
    for name in NAMES[:3]:
        passes = circular_passes(choices, "B")
        picks = [
            ask(
                client,
                name,
                template.render(
                    question="The red bus in the photo: what colour is it?", options=format_options(p.options), hint=""
                ),
            )
            for p in passes
        ]
        solved[name] = all(pick == p.answer for pick, p in zip(picks, passes))
    assert solved == {"demo-strong": True, "demo-fair": solved["demo-fair"], "demo-weak": False}
    # The same request gets the same reply.
    again = template.render(question="The red bus in the photo: what colour is it?", options=format_options(choices), hint="")
    assert ask(client, "demo-fair", again) == ask(client, "demo-fair", again)


def test_choice_extraction_reads_the_reply_it_is_shown(client):
    template = Prompts().get("mcq_extract", "en")
    options = {"A": "Blue", "B": "Red", "C": "Green"}
    for output, expected in [("I think the answer is C.", "C"), ("It is red, clearly.", "B"), ("No idea.", "Z")]:
        reply = ask(
            client,
            "demo-judge",
            template.render(question="Colour?", options=format_options(options), output=output, letters="ABC"),
        )
        assert parse_extractor_reply(reply, "ABC") == expected


def test_judges_grade_demo_answers_by_their_quality_pointwise_and_pairwise(client):
    prompts = Prompts()
    answers = {name: ask(client, name, "What does the street sign say?") for name in NAMES[:3]}
    assert all(a.startswith("[demo output]") for a in answers.values())
    rating = {
        name: parse_rating(
            ask(
                client,
                "demo-judge",
                prompts.get("pointwise", "en").render(
                    question="What does the street sign say?",
                    reference="STOP",
                    answer=answer,
                    task="ocr",
                    task_rule="",
                    history="",
                    question_type="",
                ),
            )
        ).value
        for name, answer in answers.items()
    }
    assert rating["demo-strong"] > rating["demo-fair"] > rating["demo-weak"]
    vote = ask(
        client,
        "demo-judge",
        prompts.get("pairwise", "en").render(
            question="What does the street sign say?",
            answer1=answers["demo-strong"],
            answer2=answers["demo-weak"],
            criteria="",
            question_type="",
            has_image="",
        ),
    )
    assert parse_vote(vote) == ANSWER1
    pair = ask(
        client,
        "demo-judge",
        prompts.get("touchstone", "en").render(
            question="q", description="d", answer1=answers["demo-weak"], answer2=answers["demo-strong"]
        ),
    )
    low, high = parse_score_pair(pair.splitlines()[0])
    assert low < high


def test_chinese_questions_get_chinese_answers_and_rewrites_follow_the_template(client):
    answer = ask(client, "demo-strong", "图中一共有几个椭圆形？")
    assert answer.startswith("【演示输出】") and "椭圆形" in answer
    rewrites = ask(
        client,
        "demo-strong",
        "请把下面这个关于图片的问题改写成五个新的问法。\n只输出5行，每行一个改写。\n原问题：图中一共有几个椭圆形？",
    )
    lines = rewrites.splitlines()
    assert len(lines) == 5 and len(set(lines)) == 5 and all("椭圆形" in line for line in lines)
