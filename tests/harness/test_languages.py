"""A Chinese release is asked and judged in Chinese: every scoring mode's requests carry the
Chinese prompts (benchforge_harness/prompts/zh/), the replies a Chinese judge writes to them are read, and
results.json records the language and the templates used. Through the CLI and the loopback server."""

import json

import pytest

from benchforge_harness.cli import main
from benchforge_harness.io import InputError
from benchforge_harness.prompts import BUILTIN_DIR, Prompts
from benchforge_harness.release import load_release

PNG_1PX = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)

ITEMS = [
    {
        "id": "z1",
        "question": "图中有几个苹果？",
        "task": "Counting",
        "category": "感知",
        "reference_answer": "三个苹果。",
        "description": "桌上放着三个红苹果。",
        "criteria": ["数目正确"],
        "images": ["images/a.png"],
    },
    {
        "id": "z2",
        "question": "这是什么水果？",
        "choices": {"A": "梨", "B": "苹果", "C": "李子"},
        "answer": "B",
        "category": "感知",
        "images": ["images/a.png"],
    },
    # an item may override the release's language
    {
        "id": "e1",
        "question": "What colour are the apples?",
        "language": "en",
        "category": "Perception",
        "reference_answer": "Red.",
        "description": "Three red apples on a table.",
        "images": ["images/a.png"],
    },
]

# Text that only the Chinese templates contain (and the English line each replaces).
ZH = {
    "mcq_question": "请只回答你所选选项的字母",
    "mcq_extract": "判断它选了哪一个选项",
    "pointwise": "从 1 到 10 中选一个分数",
    "pairwise": "判断哪个回答更好",
    "touchstone": "你要评判两个 AI 助手",
    "hallucination": "是否有幻觉",
    "counting_rule": "这是一道计数题",
    "retry_pointwise": "我无法从上面的回复中读出分数",
}
EN = {
    "mcq_question": "Answer with the letter of the option you choose",
    "pointwise": "Choose a grade from 1 to 10",
    "touchstone": "You judge two AI assistants",
    "hallucination": "You check an AI assistant's answer",
}


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.fixture
def env(tmp_path, fake_llm, monkeypatch):
    release = tmp_path / "release"
    (release / "images").mkdir(parents=True)
    (release / "images" / "a.png").write_bytes(PNG_1PX)
    write_jsonl(release / "items.jsonl", ITEMS)
    (release / "manifest.json").write_text(json.dumps({"name": "中文基准", "version": "1", "language": "zh"}), encoding="utf-8")
    monkeypatch.setenv("HARNESS_TEST_KEY", "x")
    models = tmp_path / "models.toml"
    models.write_text(
        "".join(
            f'[models.{name}]\nprovider = "openai"\nbase_url = "{fake_llm.base_url("openai")}"\nmodel = "{name}"\n'
            f'api_key_env = "HARNESS_TEST_KEY"\nmax_concurrency = 2\nmax_retries = 0\nvision = false\n'
            for name in ("judge", "model", "extractor")
        ),
        encoding="utf-8",
    )

    class Env:
        root = tmp_path
        server = fake_llm

        def run(self, command, *rest):
            return main([command, "--release", str(release), "--models", str(models), "--no-cache", *rest])

        def predictions(self, answers):
            return write_jsonl(tmp_path / "m.jsonl", [{"id": i, "model": "m", "answer": a} for i, a in answers.items()])

        def results(self, out):
            return json.loads((tmp_path / out / "results.json").read_text(encoding="utf-8"))

        def prompts(self, model):
            """The text of each request's last user turn, in order."""
            texts = []
            for body in self.server.requests(model):
                content = body["messages"][-1]["content"]
                texts.append(content if isinstance(content, str) else content[-1]["text"])
            return texts

    return Env()


def zh_template_hashes(*names):
    return {name: Prompts().get(name, "zh").sha256 for name in names}


def test_every_english_template_and_rule_has_a_chinese_one_with_the_same_placeholders():
    english = sorted(p.relative_to(BUILTIN_DIR) for p in BUILTIN_DIR.rglob("*.txt") if "zh" not in p.parts)
    assert len(english) >= 17
    for relative in english:
        chinese = BUILTIN_DIR / "zh" / relative
        assert chinese.is_file(), f"no Chinese version of {relative}"
        if relative.parts[0] != "rules":
            name = relative.stem
            assert Prompts().get(name, "zh").fields == Prompts().get(name, "en").fields, name


def test_items_take_the_release_language_unless_they_name_their_own(env):
    release = load_release(env.root / "release")
    assert {item.id: item.language for item in release.items} == {"z1": "zh", "z2": "zh", "e1": "en"}
    assert release.languages == ["en", "zh"]
    write_jsonl(env.root / "release" / "items.jsonl", [{**ITEMS[0], "language": "fr"}])
    with pytest.raises(InputError, match="language 'fr' is not one of en, zh"):
        load_release(env.root / "release")


def test_mcq_asks_and_extracts_in_chinese_and_reads_chinese_replies(env):
    def model(body):
        # the model answers in a Chinese sentence on every pass, naming the option text on the last ones
        options = {line[0]: line[3:] for line in env.prompts("model")[-1].splitlines() if line[1:3] == ". "}
        letter = {text: letter for letter, text in options.items()}["苹果"]
        n = len(env.server.requests("model"))
        return f"答案是{letter}。" if n < 3 else "我觉得是那个红色的、圆圆的水果。"

    env.server.script("model", model)

    def extractor(body):
        options = {line[3:]: line[0] for line in env.prompts("extractor")[-1].splitlines() if line[1:3] == ". "}
        return options["苹果"] if "红色的、圆圆的" in env.prompts("extractor")[-1] else "Z"

    env.server.script("extractor", extractor)
    assert env.run("mcq", "--model", "model", "--extractor", "extractor", "--text-only", "--out", str(env.root / "q")) == 0
    asked, extracted = env.prompts("model"), env.prompts("extractor")
    assert len(asked) == 3 and all(ZH["mcq_question"] in text and "问题：这是什么水果？" in text for text in asked)
    assert extracted and all(ZH["mcq_extract"] in text for text in extracted)
    result = env.results("q")
    assert result["models"]["model"]["circular"] == 1.0  # "答案是B" read by rule, the paraphrase by the extractor
    assert result["models"]["model"]["extraction"] == {"heuristic": 2, "extractor": 1}
    assert result["prompts"]["templates"]["zh"] == zh_template_hashes("mcq_question", "mcq_extract", "retry_mcq_extract")


def test_pointwise_judges_in_the_item_language_with_the_chinese_task_rule(env):
    replies = iter(
        [
            "我拒绝按格式回答。",  # unreadable: re-asked in Chinese
            '```json\n{"rating"：8，"reason"："数目正确，但描述简略。"}\n```',  # full-width punctuation
        ]
    )

    def judge(body):
        text = env.prompts("judge")[-1]
        return '{"rating": 9, "reason": "Correct."}' if "What colour" in text else next(replies)

    env.server.script("judge", judge)
    preds = env.predictions({"z1": "三个。", "e1": "Red."})
    assert env.run("judge", "--judge", "judge", "--predictions", preds, "--out", str(env.root / "j")) == 0
    prompts = env.prompts("judge")
    chinese = [t for t in prompts if "图中有几个苹果" in t]
    english = [t for t in prompts if "What colour" in t]
    assert ZH["pointwise"] in chinese[0] and ZH["counting_rule"] in chinese[0] and EN["pointwise"] not in chinese[0]
    assert any(ZH["retry_pointwise"] in t for t in prompts)  # the re-ask is Chinese too
    assert EN["pointwise"] in english[0] and ZH["pointwise"] not in english[0]
    result = env.results("j")
    assert result["models"]["m"]["judged"] == 2 and result["models"]["m"]["unparsed"] == 0
    assert result["models"]["m"]["mean"] == pytest.approx(8.5)
    assert result["prompts"]["languages"] == ["en", "zh"]
    assert result["prompts"]["templates"]["zh"] == zh_template_hashes("pointwise", "retry_pointwise")
    assert set(result["prompts"]["templates"]) == {"en", "zh"}


def test_pairwise_touchstone_and_hallucination_in_chinese(env):
    def judge(body):
        text = env.prompts("judge")[-1]
        if ZH["pairwise"] in text:
            return "回答二数对了苹果。\n**Answer2**"
        if ZH["touchstone"] in text:
            return "8 6\n助手一更准确。" if "[Assistant 1]\n有三只" in text else "6 8\n助手二更准确。"
        if ZH["hallucination"] in text:
            return '{"score"：1，"reason"："基本没有幻觉"}'
        return "unexpected English prompt"

    env.server.script("judge", judge)
    anchor = write_jsonl(env.root / "anchor.jsonl", [{"id": "z1", "model": "anchor", "answer": "两个"}])
    preds = env.predictions({"z1": "有三只"})
    assert (
        env.run(
            "pairwise",
            "--judge",
            "judge",
            "--anchor",
            anchor,
            "--predictions",
            preds,
            "--text-only",
            "--bootstrap",
            "10",
            "--out",
            str(env.root / "p"),
        )
        == 0
    )
    # the model's answer is Answer2 in order 1 and Answer1 in order 2: the judge always picks
    # Answer2 here, so the two orders disagree -> a tie, and both votes were read
    pairwise = env.results("p")
    assert pairwise["models"]["m"]["tie"] == 1 and pairwise["models"]["m"]["failed_ids"] == {"e1": "no answer from the model"}
    assert pairwise["prompts"]["templates"]["zh"] == zh_template_hashes("pairwise", "retry_pairwise")

    assert env.run("touchstone", "--judge", "judge", "--predictions", preds, "--out", str(env.root / "t")) == 0
    touchstone = env.results("t")["models"]["m"]
    assert touchstone["scored"] == 1 and touchstone["score"] == 8.0 and touchstone["reference_score"] == 6.0

    assert env.run("hallucination", "--judge", "judge", "--predictions", preds, "--out", str(env.root / "h")) == 0
    assert env.results("h")["models"]["m"]["mean"] == 1.0
    assert not any("unexpected" in t for t in env.prompts("judge"))


def test_the_command_line_can_force_one_language(env):
    env.server.script("judge", '{"score": 0, "reason": "fine"}')
    preds = env.predictions({"z1": "三个"})
    out = str(env.root / "h")
    assert env.run("hallucination", "--judge", "judge", "--predictions", preds, "--language", "en", "--out", out) == 0
    assert EN["hallucination"] in env.prompts("judge")[0]
    recorded = env.results("h")["prompts"]
    assert recorded["forced_language"] == "en" and list(recorded["templates"]) == ["en"]
    # the same output folder with the other language is another run: refused unless restarted
    assert env.run("hallucination", "--judge", "judge", "--predictions", preds, "--out", out) == 2
