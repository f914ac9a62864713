"""The harness's command-line tests' world: a release folder, a models file naming endpoints of the
loopback LLM server, and a runner for `python -m benchforge_harness` commands (the `env` fixture)."""

import json

import pytest

from benchforge_harness.cli import main

PNG_1PX = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)

ITEMS = [
    {
        "id": "c1",
        "question": "How many apples?",
        "task": "Counting",
        "category": "Perception",
        "reference_answer": "Three apples.",
        "images": ["images/a.png"],
    },
    {
        "id": "c1-r1",
        "seed_id": "c1",
        "question": "Count the apples.",
        "task": "Counting",
        "category": "Perception",
        "reference_answer": "Three apples.",
        "images": ["images/a.png"],
    },
    {
        "id": "c1-r2",
        "seed_id": "c1",
        "question": "Apples: how many?",
        "task": "Counting",
        "category": "Perception",
        "reference_answer": "Three apples.",
        "images": ["images/a.png"],
    },
    {
        "id": "w1",
        "question": "Write a poem about it.",
        "task": "Writing",
        "category": "Reasoning",
        "reference_answer": "A short poem.",
        "images": ["images/a.png"],
        "description": "Three red apples on a table.",
        "criteria": ["mentions apples", "is a poem"],
        "question_type": "open-ended",
    },
    {
        "id": "w1-r1",
        "seed_id": "w1",
        "question": "Compose verse about the picture.",
        "task": "Writing",
        "category": "Reasoning",
        "reference_answer": "A short poem.",
        "images": ["images/a.png"],
        "description": "Three red apples on a table.",
    },
    {
        "id": "t1",
        "question": "What did I ask before?",
        "task": "Coherence",
        "category": "Dialogue",
        "reference_answer": "You asked about apples.",
        "images": ["images/a.png"],
        "history": [{"role": "user", "content": "Describe the fruit."}, {"role": "assistant", "content": "Red apples."}],
    },
    {
        "id": "m1",
        "question": "Which fruit?",
        "choices": {"A": "pear", "B": "apple", "C": "plum", "D": "fig"},
        "answer": "B",
        "category": "Perception",
        "subcategory": "Coarse",
        "task": "fruit",
        "images": ["images/a.png"],
    },
    {
        "id": "m2",
        "question": "What colour?",
        "choices": {"A": "red", "B": "blue"},
        "answer": "A",
        "category": "Perception",
        "subcategory": "Fine",
        "task": "colour",
        "images": ["images/a.png"],
    },
    {"id": "m3", "question": "Hidden key?", "choices": {"A": "x", "B": "y"}, "category": "Perception"},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.fixture
def env(tmp_path, fake_llm, monkeypatch):
    """A release folder, a models file for the fake server, and a runner for CLI calls."""
    release = tmp_path / "release"
    (release / "images").mkdir(parents=True)
    (release / "images" / "a.png").write_bytes(PNG_1PX)
    write_jsonl(release / "items.jsonl", ITEMS)
    monkeypatch.setenv("HARNESS_TEST_KEY", "x")
    models = tmp_path / "models.toml"
    models.write_text(
        "".join(
            f'[models.{name}]\nprovider = "openai"\nbase_url = "{fake_llm.base_url("openai")}"\nmodel = "{name}"\n'
            f'api_key_env = "HARNESS_TEST_KEY"\nmax_concurrency = 4\nmax_retries = 0\nvision = {vision}\n'
            for name, vision in (("judge", "false"), ("vlm", "true"), ("textlm", "false"), ("extractor", "false"))
        ),
        encoding="utf-8",
    )

    class Env:
        root = tmp_path
        server = fake_llm

        def run(self, *argv, cache=True):
            command, *rest = argv
            common = ["--release", str(release), "--models", str(models)]
            if command not in ("agreement", "report"):
                rest = common + (["--cache", str(tmp_path / "cache.sqlite")] if cache else ["--no-cache"]) + rest
            return main([command, *rest])

        def predictions(self, model, answers):
            return write_jsonl(tmp_path / f"{model}.jsonl", [{"id": i, "model": model, "answer": a} for i, a in answers.items()])

        def results(self, out):
            return json.loads((tmp_path / out / "results.json").read_text(encoding="utf-8"))

        def samples(self, out, name="samples.jsonl"):
            return [json.loads(line) for line in (tmp_path / out / name).read_text(encoding="utf-8").splitlines()]

    return Env()
