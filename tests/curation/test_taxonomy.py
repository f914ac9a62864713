import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from benchforge.errors import DomainError
from curation.models import Benchmark, Category, Task
from curation.presets import PRESETS
from curation.services import load_preset
from jobs.selectors import jobs_of

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "key, categories, tasks",
    [
        ("alignmmbench", 3, 13),
        ("mllm-bench", 6, 42),
        ("mmbench", 8, 20),  # 2 L1 + 6 L2 categories, 20 L3 tasks
        ("touchstone", 5, 27),
    ],
)
def test_presets_have_the_published_shape(key, categories, tasks):
    benchmark = load_preset(key)
    assert benchmark.categories.count() == categories
    assert benchmark.tasks.count() == tasks


def test_mmbench_tasks_hang_under_l2_under_l1():
    benchmark = load_preset("mmbench")
    task = benchmark.tasks.get(name="Celebrity Recognition")
    assert task.category.name == "Fine-grained Single-instance Perception"
    assert task.category.parent.name == "Perception"
    assert task.category.path == "Perception / Fine-grained Single-instance Perception"


def test_alignmmbench_preset_carries_keywords_and_judge_rules():
    benchmark = load_preset("alignmmbench")
    counting = benchmark.tasks.get(name_en="Counting")
    assert counting.name == "计数" and "人群" in counting.collection_keywords
    assert "数量" in counting.judge_rules and "count" in counting.judge_rules_en.lower()
    incoherence = benchmark.tasks.get(name_en="Incoherence")
    assert (incoherence.category.name, incoherence.category.name_en) == ("对话上下文", "Dialogue Context")


def test_mllm_bench_preset_matches_the_released_question_file():
    """Every (level, capability) of the real questions maps to a preset task, so imports line up."""
    import json

    from tests.conftest import shared_fixture

    path = shared_fixture("mllm-bench", "questions.jsonl")
    benchmark = load_preset("mllm-bench")
    names = {(t.category.name, t.name.lower()) for t in benchmark.tasks.select_related("category")}
    spelled = {"attribute comparision": "attribute comparison"}  # the release misspells one capability
    for line in path.read_text().splitlines():
        row = json.loads(line)
        cap = row["capability"].strip().lower()
        assert (row["level"], spelled.get(cap, cap)) in names


def test_reloading_a_preset_adds_nothing_and_keeps_edits():
    benchmark = load_preset("alignmmbench", slug="b1")
    task = benchmark.tasks.get(slug="ocr")
    task.quota = 7
    task.guideline = "ours"
    task.save()
    again = load_preset("alignmmbench", slug="b1")
    assert again.pk == benchmark.pk
    assert Task.objects.filter(benchmark=benchmark).count() == 13
    assert Category.objects.filter(benchmark=benchmark).count() == 3
    task.refresh_from_db()
    assert (task.quota, task.guideline) == (7, "ours")


def test_unknown_preset_is_a_clear_error():
    with pytest.raises(DomainError, match="Unknown preset 'nope'. Available presets: alignmmbench"):
        load_preset("nope")
    assert not Benchmark.objects.exists()


def test_load_preset_command(capsys):
    call_command("load_preset", "touchstone", "--slug", "ts")
    assert "27 tasks" in capsys.readouterr().out
    assert Benchmark.objects.get(slug="ts").tasks.count() == 27
    with pytest.raises(CommandError, match="Unknown preset"):
        call_command("load_preset", "bogus")


def test_every_preset_task_slug_is_unique_within_its_preset():
    from curation.services import unique_task_slug

    for preset in PRESETS.values():
        slugs = [unique_task_slug(t.name_en or t.name) for t in preset.iter_tasks()]
        assert len(slugs) == len(set(slugs)), preset.key


def test_researcher_loads_a_preset_from_the_ui(client_for, researcher, django_capture_on_commit_callbacks):
    c = client_for(researcher)
    with django_capture_on_commit_callbacks(execute=True):  # the job starts when the request commits
        resp = c.post("/benchmarks/new/", {"name": "Chart study", "slug": "", "description": "", "preset": "mmbench"})
    assert resp.status_code == 302
    benchmark = Benchmark.objects.get(slug="chart-study")
    assert benchmark.tasks.count() == 20
    job = jobs_of(benchmark, kind="load_preset").get()
    assert job.status == "succeeded" and job.done == 1
    page = c.get("/b/chart-study/taxonomy/")
    assert "Celebrity Recognition" in page.content.decode()


def test_researcher_edits_a_task_quota_and_keywords(client_for, researcher, benchmark):
    c = client_for(researcher)
    resp = c.post(
        "/b/demo/taxonomy/counting/",
        {
            "name": "Counting",
            "description": "d",
            "collection_keywords": "crowds, coins",
            "guideline": "g",
            "judge_rules": "r",
            "quota": "120",
        },
    )
    assert resp.status_code == 302
    task = benchmark.tasks.get(slug="counting")
    assert task.quota == 120 and task.collection_keywords == ["crowds", "coins"]


def test_invalid_task_edit_shows_the_form_again(client_for, researcher, benchmark):
    resp = client_for(researcher).post("/b/demo/taxonomy/counting/", {"name": "", "quota": "-3"})
    assert resp.status_code == 200
    assert benchmark.tasks.get(slug="counting").quota == 80


def test_the_alignmmbench_preset_makes_a_chinese_benchmark_unless_another_language_is_chosen(researcher, client_for):
    """AlignMMBench's questions are Chinese: a benchmark made from its preset asks and judges in
    Chinese; the others stay English, and a language chosen when creating one wins."""
    from curation.services import create_benchmark

    assert load_preset("alignmmbench", slug="align").language == "zh"
    assert load_preset("mmbench", slug="mmb").language == "en"
    assert create_benchmark(name="Align two", preset="alignmmbench").language == "zh"
    assert create_benchmark(name="Align in English", preset="alignmmbench", language="en").language == "en"
    assert create_benchmark(name="Plain").language == "en"
    # the form: left at "the preset's", the preset decides
    client_for(researcher).post("/benchmarks/new/", {"name": "From the form", "preset": "alignmmbench", "language": ""})
    assert Benchmark.objects.get(slug="from-the-form").language == "zh"
