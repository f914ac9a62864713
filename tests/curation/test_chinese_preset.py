"""The AlignMMBench preset makes a Chinese benchmark: its task names, guidelines and judge rules are
Chinese (what annotators read and the judge is given), and the English interface shows the
English beside them. Benchmarks of other presets, and one chosen to be in English, read as before."""

import pytest

from curation.presets import PRESETS
from curation.services import create_benchmark, load_preset

pytestmark = pytest.mark.django_db

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-CN,zh;q=0.9"}
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
GUIDE_ZH = "只问能数清楚的东西；参考答案给出确切数字。"
GUIDE_EN = "Ask for a count of clearly countable things; the reference gives the exact number."
RULE_ZH = "数量与参考答案不同即为错误，其余部分写得再好也一样。"


def test_every_alignmmbench_task_is_named_and_guided_in_chinese_with_the_papers_english_names_as_aliases():
    preset = PRESETS["alignmmbench"]
    tasks = list(preset.iter_tasks())
    assert len(tasks) == 13
    assert {t.name_en for t in tasks} == {
        *("Description", "Recognition", "Counting", "OCR", "Meme", "Knowledge", "Reasoning"),
        *("Chart", "Problem", "Comparison", "Writing", "Coherence", "Incoherence"),
    }
    han = lambda text: any("\u4e00" <= ch <= "\u9fff" for ch in text)  # noqa: E731
    for t in tasks:
        assert han(t.guideline) and t.guideline_en and not han(t.guideline_en), t.name_en
        assert han(t.description) and t.description_en, t.name_en
        assert (han(t.judge_rules) and t.judge_rules_en) if t.judge_rules else not t.judge_rules_en, t.name_en
        assert t.name == "OCR" or han(t.name), t.name_en


def test_the_editor_reads_chinese_in_the_chinese_interface_and_english_beside_it_in_the_english_one(
    client_for, annotator, benchmark, counting
):
    from annotation.services import create_item

    item = create_item(benchmark, task=counting, user=annotator, assignee=annotator)
    client = client_for(annotator)
    zh = client.get(f"/b/demo/items/{item.pk}/", **ZH).content.decode()
    assert '<h2 data-field="name">计数</h2>' in zh and GUIDE_ZH in zh and RULE_ZH in zh
    assert "Counting" not in zh and GUIDE_EN not in zh and "感知与理解" in zh

    en = client.get(f"/b/demo/items/{item.pk}/", **EN).content.decode()
    assert '<h2 data-field="name">Counting · 计数</h2>' in en and "Perception &amp; Understanding" in en
    assert GUIDE_EN in en and GUIDE_ZH in en  # the English beside the guideline the annotators read
    assert '<option value="counting" selected>Counting · 计数</option>' in en


def test_the_taxonomy_and_item_list_name_tasks_per_interface_language(client_for, researcher, annotator, benchmark, counting):
    from annotation.services import create_item

    benchmark.members.add(researcher)
    create_item(benchmark, task=counting, user=annotator, assignee=annotator)
    client = client_for(researcher)
    zh = client.get("/b/demo/taxonomy/", **ZH).content.decode()
    assert "计数" in zh and RULE_ZH in zh and "对话纠错" in zh and "Counting" not in zh
    en = client.get("/b/demo/taxonomy/", **EN).content.decode()
    assert "Counting · 计数" in en and RULE_ZH in en and "Any number other than the reference count is wrong" in en
    assert "计数 (感知与理解)" in client.get("/b/demo/items/", **ZH).content.decode()
    assert "Counting · 计数 (Perception &amp; Understanding)" in client.get("/b/demo/items/", **EN).content.decode()


def test_an_english_benchmark_from_the_preset_and_the_other_presets_read_as_before(client_for, researcher):
    english = create_benchmark(name="Align in English", preset="alignmmbench", language="en", user=researcher)
    counting = english.tasks.get(slug="counting")
    assert (counting.name, counting.name_en, counting.category.name) == ("Counting", "", "Perception & Understanding")
    assert counting.guideline == GUIDE_EN and "crowds" in counting.collection_keywords
    mmbench = load_preset("mmbench", slug="mm")
    task = mmbench.tasks.get(name="Celebrity Recognition")
    assert (task.name_en, task.display_name, task.label) == ("", "Celebrity Recognition", task.label)
    assert task.label == "Celebrity Recognition (Perception / Fine-grained Single-instance Perception)"


def test_a_task_edit_keeps_both_languages(client_for, researcher, benchmark, counting):
    benchmark.members.add(researcher)
    response = client_for(researcher).post(
        "/b/demo/taxonomy/counting/",
        {
            "name": "计数",
            "name_en": "Counting objects",
            "description": "数一数",
            "guideline": "新的说明",
            "guideline_en": "New guideline",
            "judge_rules": "新规则",
            "quota": "10",
        },
    )
    assert response.status_code == 302
    counting.refresh_from_db()
    assert (counting.name, counting.name_en, counting.guideline_en, counting.judge_rules) == (
        "计数",
        "Counting objects",
        "New guideline",
        "新规则",
    )
