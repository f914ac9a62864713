"""Benchmarks made from the AlignMMBench preset while it was English take its Chinese names and
texts (migration 0006), keeping the English as aliases; what a researcher wrote stays theirs."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("curation", "0004_benchmark_language")]
AFTER = [("curation", "0006_alignmmbench_in_chinese")]
OLD_GUIDE = "Ask for a count of clearly countable things; the reference gives the exact number."
OLD_RULE = "Any number other than the reference count is wrong, however good the rest of the answer is."


def test_an_english_alignmmbench_benchmark_becomes_chinese_with_english_aliases():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    Benchmark, Category, Task = (old.get_model("curation", name) for name in ("Benchmark", "Category", "Task"))
    align = Benchmark.objects.create(name="Align", slug="align", preset="alignmmbench", language="zh")
    other = Benchmark.objects.create(name="Mine", slug="mine", preset="", language="en")
    perception = Category.objects.create(benchmark=align, name="Perception & Understanding")
    Task.objects.create(
        benchmark=align, category=perception, name="Counting", slug="counting", guideline=OLD_GUIDE, judge_rules=OLD_RULE
    )
    Task.objects.create(benchmark=align, category=perception, name="OCR", slug="ocr", guideline="Our own words.")
    Task.objects.create(
        benchmark=other, category=Category.objects.create(benchmark=other, name="Things"), name="Counting", slug="c"
    )

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    Task, Category = new.get_model("curation", "Task"), new.get_model("curation", "Category")
    counting = Task.objects.get(benchmark__slug="align", slug="counting")
    assert (counting.name, counting.name_en) == ("计数", "Counting")
    assert (counting.guideline_en, counting.judge_rules_en) == (OLD_GUIDE, OLD_RULE)
    assert counting.guideline.startswith("只问能数清楚") and "数量" in counting.judge_rules
    ocr = Task.objects.get(benchmark__slug="align", slug="ocr")
    assert (ocr.name, ocr.name_en, ocr.guideline, ocr.guideline_en) == ("OCR", "OCR", "Our own words.", "")
    category = Category.objects.get(benchmark__slug="align")
    assert (category.name, category.name_en) == ("感知与理解", "Perception & Understanding")
    untouched = Task.objects.get(benchmark__slug="mine")  # no preset: as it was
    assert (untouched.name, untouched.name_en) == ("Counting", "")

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
