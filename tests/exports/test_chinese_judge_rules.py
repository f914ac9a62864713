"""A benchmark made from the AlignMMBench preset judges in Chinese: its tasks' Chinese judge rules
travel in the release's taxonomy.json and reach the judge's prompt under the Chinese task name."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from exports import services
from exports.models import Score

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]
RULE_ZH = "数量与参考答案不同即为错误，其余部分写得再好也一样。"


def test_the_presets_chinese_judge_rule_reaches_the_judge_prompt(
    built, counting, researcher, api_for, declare, fake_llm, django_capture_on_commit_callbacks
):
    assert counting.judge_rules == RULE_ZH  # as the preset made it: nobody edited it
    release = services.freeze(built(), user=researcher)
    assert {t["name"]: t["judge_rule"] for t in release.taxonomy["tasks"]}["计数"] == RULE_ZH
    declare("judge", model="judge-model")
    fake_llm.script("judge-model", '{"rating": 6, "reason": "数对了一半"}')
    ids = [r["id"] for r in release.items.order_by("order").values_list("row", flat=True) if not r["choices"]]
    upload = SimpleUploadedFile("p.jsonl", "".join(json.dumps({"id": i, "answer": "三个苹果。"}) + "\n" for i in ids).encode())
    with django_capture_on_commit_callbacks(execute=True):
        response = api_for(researcher).post(
            f"/api/v1/benchmarks/demo/releases/{release.version}/leaderboard/",
            {"label": "my-vlm", "method": "pointwise", "judge": "judge", "predictions": upload},
            format="multipart",
        )
    assert response.status_code == 201, response.content
    score = Score.objects.get(pk=response.json()["id"])
    assert score.status == Score.Status.DONE, score.job.message
    prompts = [json.dumps(r["messages"], ensure_ascii=False) for r in fake_llm.requests("judge-model")]
    assert len(prompts) == 18 and all(RULE_ZH in p and "计数" in p for p in prompts)
    assert not any("Any number other than the reference count" in p for p in prompts)  # not the English text
