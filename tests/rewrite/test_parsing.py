"""Reading rewrites out of messy model replies, the similarity hint and the prompts (no database)."""

import pytest

from rewrite import prompts
from rewrite.parsing import parse_reply
from rewrite.similarity import has_cjk, is_near_copy, similarity

SEED = "图中有几只猫？"
GOOD = [
    "图片里一共有多少只猫？",
    "请数一数画面中的猫有几只。",
    "这张照片上能看到几只猫呢？",
    "画面里的猫总共有几只？",
    "你能告诉我图上猫的数量吗？",
]


def reasons(result):
    return [d.reason for d in result.dropped]


@pytest.mark.parametrize(
    "reply",
    [
        "\n".join(GOOD),
        "\n".join(f"{i}. {t}" for i, t in enumerate(GOOD, 1)),
        "\n".join(f"{i}、{t}" for i, t in enumerate(GOOD, 1)),
        "\n".join(f"({i}) {t}" for i, t in enumerate(GOOD, 1)),
        "\n".join(f"（{i}）{t}" for i, t in enumerate(GOOD, 1)),
        "\n".join(f"- {t}" for t in GOOD),
        "\n".join(f"• “{t}”" for t in GOOD),
        "\n".join(f'{i}) "{t}"' for i, t in enumerate(GOOD, 1)),
        "\n".join(f"「{t}」" for t in GOOD),
        "\n\n".join(GOOD) + "\n\n",
        "\n".join(f"改写{i}：{t}" for i, t in enumerate(GOOD, 1)),
        "\n".join(f"**Rewrite {i}:** {t}" for i, t in enumerate(GOOD, 1)),
        "\n".join(f"{i}. **{t}**" for i, t in enumerate(GOOD, 1)),
        "```\n" + "\n".join(GOOD) + "\n```",
        '["' + '", "'.join(GOOD) + '"]',
        '```json\n{"rewrites": ["' + '", "'.join(GOOD) + '"]}\n```',
        "①" + "\n②".join(GOOD),
    ],
    ids=[
        "bare", "dot", "dun", "paren", "fullwidth-paren", "dash", "bullet-curly-quotes", "paren-straight-quotes",
        "corner-quotes", "blank-lines", "zh-labels", "bold-labels", "bold", "fence", "json", "json-object-fence", "circled",
    ],
)  # fmt: skip
def test_every_shape_of_a_good_reply_gives_the_five_rewrites(reply):
    result = parse_reply(reply, seed=SEED, n=5)
    assert result.rewrites == GOOD and result.dropped == [] and not result.refusal


def test_a_preamble_and_a_closing_remark_are_left_out_with_their_reason():
    reply = "好的，以下是五个改写：\n\n" + "\n".join(f"{i}. {t}" for i, t in enumerate(GOOD, 1)) + "\n\n希望这些改写对你有帮助！"
    result = parse_reply(reply, seed=SEED, n=5)
    assert result.rewrites == GOOD
    assert [(d.line, d.reason) for d in result.dropped] == [
        ("好的，以下是五个改写：", "remark"),
        ("希望这些改写对你有帮助！", "remark"),
    ]


def test_an_english_preamble_without_numbering_is_a_remark():
    reply = "Sure! Here are five ways to ask it:\nHow many cats can you see?\nCount the cats in the picture.\nWhat is the number of cats shown?"
    result = parse_reply(reply, seed="How many cats are there?", n=5)
    assert result.rewrites == [
        "How many cats can you see?",
        "Count the cats in the picture.",
        "What is the number of cats shown?",
    ]
    assert reasons(result) == ["remark"]


def test_the_seed_repeated_duplicates_and_extra_lines_are_dropped():
    reply = "\n".join([SEED, GOOD[0], GOOD[1], f"“{GOOD[0]}”", GOOD[2], GOOD[3], GOOD[4], "还有一个：图上的猫咪数目是多少？"])
    result = parse_reply(reply, seed=SEED, n=5)
    assert result.rewrites == GOOD
    assert reasons(result) == ["seed", "duplicate", "extra"]


def test_more_lines_than_asked_keeps_the_first_n():
    result = parse_reply("\n".join(GOOD), seed=SEED, n=3)
    assert result.rewrites == GOOD[:3] and reasons(result) == ["extra", "extra"]


def test_fewer_lines_than_asked_keeps_what_there_is():
    result = parse_reply("\n".join(GOOD[:2]), seed=SEED, n=5)
    assert result.rewrites == GOOD[:2] and result.dropped == []


def test_rewrites_already_kept_are_not_taken_again():
    result = parse_reply("\n".join(GOOD[:3]), seed=SEED, n=5, existing=[GOOD[0]])
    assert result.rewrites == GOOD[1:3] and reasons(result) == ["duplicate"]


@pytest.mark.parametrize(
    "reply", ["抱歉，我无法完成这个请求。", "I'm sorry, but I can't help with that request.", "As an AI, I cannot rewrite this."]
)
def test_a_refusal_is_recognised(reply):
    result = parse_reply(reply, seed=SEED, n=5)
    assert result.refusal and result.rewrites == [] and reasons(result) == ["refusal"]


def test_an_empty_reply_gives_nothing():
    result = parse_reply("", seed=SEED, n=5)
    assert result.rewrites == [] and result.dropped == [] and not result.refusal


def test_a_numbered_line_with_nothing_after_it_is_empty():
    result = parse_reply("1.\n2. " + GOOD[0], seed=SEED, n=5)
    assert result.rewrites == [GOOD[0]] and reasons(result) == ["empty"]


def test_similarity_uses_bigrams_for_chinese_and_trigrams_otherwise():
    assert has_cjk(SEED) and not has_cjk("How many cats?")
    assert similarity(SEED, SEED) == 1.0
    assert similarity(SEED, "图中有几只猫呢？") >= 0.8  # one particle added: a near copy
    assert similarity(SEED, "请数一数画面中的猫有几只。") < 0.5
    assert similarity("How many cats are there?", "How many cats are there in it?") >= 0.8
    assert similarity("How many cats are there?", "Count the felines in the photo.") < 0.2
    assert is_near_copy(0.8) and not is_near_copy(0.79) and not is_near_copy(None)


def test_prompts_fill_the_placeholders_and_the_retry_carries_the_first_reply():
    text = prompts.render(prompts.DEFAULT_TEMPLATES["zh"], question=SEED, n=5, language="zh", choices=["2", "3"])
    assert "五个" in text and "只输出5行" in text and text.endswith("原问题：" + SEED) and "A. 2\nB. 3" in text
    english = prompts.render("Give {count} ({n}) of {question} {unknown}", question="Q?", n=3, language="en")
    assert english == "Give three (3) of Q? {unknown}"
    first = prompts.first_messages(prompts.DEFAULT_TEMPLATES["en"], question="Q?", n=5, language="en")
    retry = prompts.retry_messages(first, "only one", question="Q?", kept=1, missing=4, language="en", refusal=False)
    assert [m["role"] for m in retry] == ["user", "assistant", "user"] and retry[1]["content"] == "only one"
    assert "Write 4 more" in retry[2]["content"]
    assert prompts.template_problems("no placeholder") and not prompts.template_problems("{question}")
