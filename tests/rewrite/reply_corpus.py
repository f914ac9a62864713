"""A corpus of rewrite replies, in the shapes models really send, for both template languages.

Each case is (name, seed, n, reply, kept): `kept` lists the rewrites a careful human keeps from the
reply, in order (at most n, never the seed however it is labelled, no duplicate, nothing in another
language than the seed, no remark or refusal). tests/rewrite/test_reply_corpus.py checks that
rewrite.parsing.parse_reply keeps exactly those.
"""

from __future__ import annotations

import json

SEEDS = {
    "zh": "图中有几只猫？",
    "en": "How many cats are in the picture?",
}
GOOD = {
    "zh": [
        "图片里一共有多少只猫？",
        "请数一数画面中的猫有几只。",
        "这张照片上能看到几只猫呢？",
        "画面里的猫总共有几只？",
        "你能告诉我图上猫的数量吗？",
        "照片中出现了多少只猫？",
        "图里的猫一共几只？",
    ],
    "en": [
        "How many cats can you see in the image?",
        "Count the cats shown in this photo.",
        "What is the number of cats in the picture?",
        "Could you tell me how many cats appear here?",
        "In this image, how many cats are there?",
        "How many felines does the photo show?",
        "What's the total number of cats pictured?",
    ],
}
OTHER = {"zh": "en", "en": "zh"}
POLITE = {"zh": "麻烦看一下：", "en": "Quick question: "}
LABEL = {"zh": "原问题：", "en": "Question: "}  # how each default template introduces the seed


def _shapes(lang: str) -> list[tuple[str, int, str, list[str]]]:
    seed, good = SEEDS[lang], GOOD[lang]
    five = good[:5]
    lines = "\n".join
    numbered = lines(f"{i}. {t}" for i, t in enumerate(five, 1))
    return [
        ("bare", 5, lines(five), five),
        ("dot", 5, numbered, five),
        ("paren", 5, lines(f"{i}) {t}" for i, t in enumerate(five, 1)), five),
        ("dun", 5, lines(f"{i}、{t}" for i, t in enumerate(five, 1)), five),
        ("fullwidth-paren", 5, lines(f"（{i}）{t}" for i, t in enumerate(five, 1)), five),
        ("circled", 5, lines(f"{c}{t}" for c, t in zip("①②③④⑤", five)), five),
        ("dash", 5, lines(f"- {t}" for t in five), five),
        ("star", 5, lines(f"* {t}" for t in five), five),
        ("bullet-curly-quotes", 5, lines(f"• “{t}”" for t in five), five),
        ("straight-quotes", 5, lines(f'"{t}"' for t in five), five),
        ("corner-quotes", 5, lines(f"「{t}」" for t in five), five),
        ("bold", 5, lines(f"{i}. **{t}**" for i, t in enumerate(five, 1)), five),
        ("bold-labels", 5, lines(f"**Rewrite {i}:** {t}" for i, t in enumerate(five, 1)), five),
        ("zh-labels", 5, lines(f"改写{i}：{t}" for i, t in enumerate(five, 1)), five),
        ("blank-lines", 5, "\n\n".join(five) + "\n\n", five),
        ("fence", 5, "```\n" + lines(five) + "\n```", five),
        ("fence-text", 5, "```text\n" + numbered + "\n```", five),
        ("json-list", 5, json.dumps(five, ensure_ascii=False), five),
        ("json-object", 5, "```json\n" + json.dumps({"rewrites": five}, ensure_ascii=False) + "\n```", five),
        ("zh-preamble-closing", 5, "好的，以下是五个改写：\n\n" + numbered + "\n\n希望这些改写对你有帮助！", five),
        ("en-preamble-closing", 5, "Sure! Here are five rewrites:\n" + lines(five) + "\nLet me know if you need more.", five),
        ("heading", 5, "## Rewrites\n" + numbered, five),
        ("too-few", 5, lines(good[:3]), good[:3]),
        ("too-many", 5, lines(good), five),
        ("n-three", 3, lines(five), good[:3]),
        ("duplicates", 5, lines([good[0], good[1], f"“{good[0]}”", good[2], good[1], good[3], good[4]]), five),
        ("already-numbered-twice", 5, numbered + "\n" + numbered, five),
        ("empty-numbers", 5, "1.\n2. " + good[0], good[:1]),
        # The seed echoed, bare or labelled in either language, anywhere in the reply.
        ("seed-bare-first", 5, lines([seed, *five]), five),
        ("seed-label-zh", 5, lines([f"原问题：{seed}", *five]), five),
        ("seed-label-en", 5, lines([f"Question: {seed}", *five]), five),
        ("seed-label-original", 5, lines([f"Original question: {seed}", *five]), five),
        ("seed-label-template-numbered", 5, lines([f"{LABEL[lang]}{seed}", numbered]), five),
        ("seed-label-bold", 5, lines([f"**{LABEL[lang]}** {seed}", "", "**Rewrites:**", numbered]), five),
        ("seed-sentence", 5, lines([f"The original question is “{seed}”", *five]), five),
        ("seed-sentence-zh", 5, lines([f"原问题是：「{seed}」", *five]), five),
        ("seed-numbered", 5, lines(f"{i}. {t}" for i, t in enumerate([seed, *five], 1)), five),
        ("seed-note", 5, lines([*five[:4], f"{seed}（原问题）", five[4]]), five),
        ("seed-quoted-last", 5, lines([*five, f"“{seed}”"]), five),
        ("seed-json", 5, json.dumps([seed, *five], ensure_ascii=False), five),
        ("seed-json-object", 5, json.dumps({"original": seed, "rewrites": five}, ensure_ascii=False), five),
        ("seed-labelled-rewrite", 5, lines([f"Rewrite 1: {seed}", *(f"Rewrite {i}: {t}" for i, t in enumerate(five, 2))]), five),
        # A prefix that is not a label makes a (poor) rewrite, not the seed: the reviewer judges it.
        ("polite-prefix", 5, lines([f"{POLITE[lang]}{seed}", *good[:2]]), [f"{POLITE[lang]}{seed}", *good[:2]]),
        ("seed-only", 5, lines([f"{LABEL[lang]}{seed}", seed]), []),
        # Refusals and replies in the other language.
        ("refusal-zh", 5, "抱歉，我无法完成这个请求。", []),
        ("refusal-en", 5, "I'm sorry, but I can't help with that request.", []),
        ("other-language", 5, lines(GOOD[OTHER[lang]][:5]), []),
        ("other-language-numbered", 5, lines(f"{i}. {t}" for i, t in enumerate(GOOD[OTHER[lang]][:5], 1)), []),
        ("mixed-languages", 5, lines([good[0], GOOD[OTHER[lang]][0], good[1], GOOD[OTHER[lang]][1], good[2]]), good[:3]),
        ("seed-in-other-template-label", 5, lines([f"{LABEL[OTHER[lang]]}{seed}", *good[:2]]), good[:2]),
    ]


CASES: list[tuple[str, str, int, str, list[str]]] = [
    (f"{lang}-{name}", SEEDS[lang], n, reply, kept) for lang in SEEDS for name, n, reply, kept in _shapes(lang)
]
