"""Rewrite batches end to end against the loopback server, through zai-sdk (GLM) and openai:
messy replies, the corrective retry, seeds needing a manual rewrite, 429 bursts, timeouts and a
crashed run resumed without a duplicate rewrite or a repeated paid call. Jobs run inline."""

import pytest

from annotation.models import Item
from benchforge.errors import DomainError, NotAllowed
from jobs import services as jobs
from jobs.models import Job
from llm.models import CachedReply
from rewrite import services
from rewrite.models import BatchSeed, RawReply, Rewrite, RewriteBatch
from tests.fakes.llm_server import Fault
from tests.rewrite.conftest import five, question_of

pytestmark = pytest.mark.django_db(transaction=True)


def start(benchmark, user, version, **kwargs):
    kwargs.setdefault("endpoint", "glm")
    return services.start_batch(benchmark, user=user, template_version=version, **kwargs)


@pytest.mark.parametrize("provider", ["zhipuai", "openai"])
def test_a_batch_rewrites_every_seed_with_its_usage_and_cost(
    provider, declare, fake_llm, benchmark, seeds, zh_template, researcher
):
    declare(provider=provider, model="glm-4", input_cost_per_mtok=1.0, output_cost_per_mtok=2.0, params={"temperature": 0.9})
    fake_llm.script("glm-4", lambda body: five(question_of(body)))
    estimate = services.estimate_batch(benchmark, endpoint="glm", template_version=zh_template)
    assert estimate["seeds"] == estimate["calls"] == 5 and estimate["prompt_tokens"] > 0 and estimate["cost"] > 0

    batch = start(benchmark, researcher, zh_template)

    batch.refresh_from_db()
    assert batch.status == RewriteBatch.Status.FINISHED and batch.job.status == Job.Status.SUCCEEDED, batch.job.message
    assert batch.model == "glm-4" and batch.n == 5 and batch.estimate["calls"] == 5
    bodies = fake_llm.requests("glm-4")
    assert len(bodies) == 5 and all(b["temperature"] == 0.9 for b in bodies)
    assert "只输出5行" in bodies[0]["messages"][0]["content"]
    assert set(BatchSeed.objects.filter(batch=batch).values_list("state", flat=True)) == {"done"}
    assert Rewrite.objects.filter(batch=batch).count() == 25 and RawReply.objects.count() == 5
    rewrite = Rewrite.objects.filter(seed=seeds[0]).order_by("position").first()
    assert rewrite.text == "请问图中有几只猫？" and rewrite.state == "pending" and 0 < rewrite.similarity_seed < 1
    assert rewrite.similarity_siblings > 0
    assert batch.usage["requests"] == 5 and batch.usage["prompt_tokens"] > 0
    assert batch.usage["cost"] == round((batch.usage["prompt_tokens"] + 2 * batch.usage["completion_tokens"]) / 1e6, 6)
    assert batch.job.result["rewritten"] == 5 and batch.job.result["rewrites"] == 25 and batch.job.result["needs_manual"] == 0
    # Seeds stay accepted until a rewrite is approved.
    assert set(Item.objects.filter(pk__in=[s.pk for s in seeds]).values_list("status", flat=True)) == {"accepted"}


def test_the_glm_path_goes_through_zai_sdk(declare, fake_llm, benchmark, seeds, zh_template, researcher):
    from benchforge_harness.llm import glm_sdk

    assert glm_sdk()[0].__module__.startswith("zai")
    declare()
    fake_llm.script("glm-4", lambda body: five(question_of(body)))
    start(benchmark, researcher, zh_template)
    assert all(h["authorization"].startswith("Bearer ") for h in fake_llm.request_headers("glm-4"))
    assert len(fake_llm.requests("glm-4")) == 5


MESSY = {
    # preamble, numbering, closing remark
    "图中有几只猫？": "好的，以下是五个改写：\n1. 图片里一共有多少只猫？\n2. 请数一数画面中的猫有几只。\n3. 这张照片上能看到几只猫呢？\n"
    "4. 画面里的猫总共有几只？\n5. 你能告诉我图上猫的数量吗？\n\n希望对你有帮助！",
    # a JSON list inside a code fence, with quotes
    "桌子上的杯子是什么颜色？": '```json\n["杯子是什么颜色的？", "桌上那只杯子的颜色是？", "请问桌面杯子呈什么颜色？", '
    '"能说一下桌上杯子的颜色吗？", "桌子上放的杯子是哪种颜色？"]\n```',
    # the seed repeated, duplicates, bullets and curly quotes: two usable -> retry
    "这张照片是在室内还是室外拍的？": "- “这张照片是在室内还是室外拍的？”\n- “这是在室内拍的还是在户外拍的？”\n"
    "- “这是在室内拍的还是在户外拍的？”\n- 「拍摄地点在屋里还是屋外？」",
    # a refusal -> retry
    "图里的人在做什么？": "抱歉，我无法完成这个请求。",
    # fewer lines than asked, labels -> retry, still short -> manual
    "画面左边的牌子上写着什么？": "改写1：左侧牌子上的文字是什么？\n改写2：请读出画面左边标牌上的字。",
}
RETRIES = {
    "这张照片是在室内还是室外拍的？": "1. 照片拍摄于室内还是室外？\n2. 这张图是在屋里照的吗，还是外面？\n3. 请判断拍摄场景是室内还是户外。",
    "图里的人在做什么？": "图中人物正在干什么？\n画面里的人在忙什么？\n请描述图里的人正在进行的活动。\n这个人在做什么事情？\n照片中的人此刻在做什么？",
    "画面左边的牌子上写着什么？": "左边那块牌子写了什么？",
}


def messy_script(body):
    question = question_of(body)
    return RETRIES[question] if len(body["messages"]) > 1 else MESSY[question]


def test_messy_replies_are_parsed_short_seeds_retried_once_then_marked_for_a_manual_rewrite(
    declare, fake_llm, benchmark, seeds, zh_template, researcher
):
    declare()
    fake_llm.script("glm-4", messy_script)
    batch = start(benchmark, researcher, zh_template)
    batch.refresh_from_db()
    assert batch.status == "finished", batch.job.message
    bodies = fake_llm.requests("glm-4")
    assert len(bodies) == 8  # 5 first requests + 3 corrective retries
    retry = next(b for b in bodies if len(b["messages"]) == 3 and question_of(b) == "图里的人在做什么？")
    assert retry["messages"][1] == {"role": "assistant", "content": "抱歉，我无法完成这个请求。"}
    assert "只有0个可用的改写" in retry["messages"][2]["content"] and "请再写5个" in retry["messages"][2]["content"]

    by_question = {s.question: s for s in seeds}

    def texts(question):
        return list(
            Rewrite.objects.filter(seed=by_question[question])
            .order_by("reply__attempt", "position")
            .values_list("text", flat=True)
        )

    def state(question):
        return BatchSeed.objects.get(batch=batch, item=by_question[question]).state

    assert texts("图中有几只猫？")[0] == "图片里一共有多少只猫？" and len(texts("图中有几只猫？")) == 5
    assert texts("桌子上的杯子是什么颜色？")[2] == "请问桌面杯子呈什么颜色？"
    indoor = "这张照片是在室内还是室外拍的？"
    assert texts(indoor) == [
        "这是在室内拍的还是在户外拍的？",
        "拍摄地点在屋里还是屋外？",
        *RETRIES[indoor].replace("1. ", "").replace("2. ", "").replace("3. ", "").split("\n"),
    ]
    assert state(indoor) == "done"
    assert len(texts("图里的人在做什么？")) == 5 and state("图里的人在做什么？") == "done"
    sign = "画面左边的牌子上写着什么？"
    assert texts(sign) == ["左侧牌子上的文字是什么？", "请读出画面左边标牌上的字。", "左边那块牌子写了什么？"]
    assert state(sign) == "manual"
    # Every raw reply is kept, with what was left out and why.
    first = RawReply.objects.get(batch_seed__item=by_question[indoor], attempt=1)
    assert first.text == MESSY[indoor] and [d["reason"] for d in first.dropped] == ["seed", "duplicate"]
    refusal = RawReply.objects.get(batch_seed__item=by_question["图里的人在做什么？"], attempt=1)
    assert refusal.refusal and refusal.dropped == [{"line": "抱歉，我无法完成这个请求。", "reason": "refusal"}]
    preamble = RawReply.objects.get(batch_seed__item=by_question["图中有几只猫？"], attempt=1)
    assert [d["reason"] for d in preamble.dropped] == ["remark", "remark"]
    assert RawReply.objects.filter(attempt=2).count() == 3
    assert batch.job.result["needs_manual"] == 1 and batch.job.result["rewritten"] == 4


def test_near_copies_of_the_seed_and_of_siblings_are_flagged(declare, fake_llm, benchmark, make_seed, zh_template, researcher):
    seed = make_seed("图中有几只猫？")
    declare()
    fake_llm.script(
        "glm-4",
        "图中有几只猫呢？\n请数一数画面中的猫有几只。\n请数一数画面中的猫有几只呀。\n这张照片上能看到几只猫呢？\n你能告诉我图上猫的数量吗？",
    )
    start(benchmark, researcher, zh_template, n=5)
    rows = {r.text: r for r in Rewrite.objects.filter(seed=seed)}
    assert rows["图中有几只猫呢？"].near_copy and rows["图中有几只猫呢？"].similarity_seed >= 0.8
    assert rows["请数一数画面中的猫有几只呀。"].near_copy and rows["请数一数画面中的猫有几只呀。"].similarity_siblings >= 0.8
    assert not rows["你能告诉我图上猫的数量吗？"].near_copy


def test_a_429_burst_is_retried_and_counted(declare, fake_llm, benchmark, seeds, zh_template, researcher):
    declare(max_concurrency=2, max_retries=4)
    answers = iter(range(1000))
    fake_llm.script("glm-4", lambda body: burst_then(body, answers))
    batch = start(benchmark, researcher, zh_template)
    batch.refresh_from_db()
    assert batch.status == "finished", batch.job.message
    assert len(fake_llm.requests("glm-4")) == 9 and batch.usage["requests"] == 9
    assert Rewrite.objects.filter(batch=batch).count() == 25


def burst_then(body, counter):
    """429 for the first four requests, then clean replies."""
    return Fault.rate_limited(retry_after=0) if next(counter) < 4 else five(question_of(body))


def test_a_timeout_fails_the_batch_resumably_and_the_resume_asks_only_that_seed(
    declare, fake_llm, benchmark, seeds, zh_template, researcher
):
    declare(timeout=0.3, max_retries=0)
    slow = seeds[2].question
    fake_llm.script("glm-4", lambda body: Fault.hang() if question_of(body) == slow else five(question_of(body)))
    batch = start(benchmark, researcher, zh_template)
    batch.refresh_from_db()
    assert batch.status == "failed" and batch.job.status == Job.Status.FAILED and batch.job.can_resume
    assert "1 call(s) failed" in batch.job.message and "timeout" in batch.job.message
    assert BatchSeed.objects.get(batch=batch, item=seeds[2]).state == "pending"
    assert Rewrite.objects.filter(batch=batch).count() == 20

    fake_llm.script("glm-4", lambda body: five(question_of(body)))
    jobs.resume(batch.job, user=researcher)
    batch.refresh_from_db()
    assert batch.status == "finished" and batch.job.status == Job.Status.SUCCEEDED, batch.job.message
    asked = [question_of(b) for b in fake_llm.requests("glm-4")]
    assert len(asked) == 6 and asked.count(slow) == 2  # only the timed-out seed was asked again
    assert Rewrite.objects.filter(batch=batch).count() == 25 and batch.usage["requests"] == 6


def test_a_crashed_run_resumes_without_duplicate_rewrites_or_a_repeated_paid_call(
    declare, fake_llm, benchmark, make_seed, zh_template, researcher, monkeypatch
):
    from rewrite.services import batches

    for i in range(12):
        make_seed(f"图中第{i}排有几只猫？")
    declare(max_concurrency=3, input_cost_per_mtok=1.0, output_cost_per_mtok=1.0)
    fake_llm.set_latency(0.02)
    fake_llm.script("glm-4", lambda body: five(question_of(body)))
    real_parsed, stored = batches._parsed, {"n": 0}

    def dying_parse(*args, **kwargs):
        stored["n"] += 1
        if stored["n"] == 5:
            raise RuntimeError("the worker dies while recording")
        return real_parsed(*args, **kwargs)

    monkeypatch.setattr(batches, "_parsed", dying_parse)
    batch = start(benchmark, researcher, zh_template)
    batch.refresh_from_db()
    assert batch.job.status == Job.Status.FAILED and "the worker dies while recording" in batch.job.message
    kept_before = Rewrite.objects.filter(batch=batch).count()
    asked_before = len(fake_llm.requests("glm-4"))
    assert 0 < kept_before < 60 and asked_before > kept_before // 5

    monkeypatch.setattr(batches, "_parsed", real_parsed)
    jobs.resume(batch.job, user=researcher)
    batch.refresh_from_db()
    assert batch.status == "finished" and batch.job.status == Job.Status.SUCCEEDED, batch.job.message
    asked = [question_of(b) for b in fake_llm.requests("glm-4")]
    assert len(asked) == len(set(asked)) == 12  # no call paid twice: the dead run's replies came from the cache
    assert Rewrite.objects.filter(batch=batch).count() == 60
    pairs = list(Rewrite.objects.filter(batch=batch).values_list("seed_id", "text"))
    assert len(pairs) == len(set(pairs)) and RawReply.objects.filter(batch_seed__batch=batch).count() == 12
    assert batch.usage["requests"] == 12 and CachedReply.objects.count() == 12
    # Calls answered before the crash but never recorded were answered by the cache on resume.
    assert batch.usage["answered_from_cache"] == 12 - kept_before // 5 - (len(asked) - asked_before) > 0


def test_seeds_are_accepted_single_turn_items_and_multiple_choice_only_when_asked(
    declare, fake_llm, benchmark, make_seed, zh_template, researcher
):
    single = make_seed("图中有几只猫？")
    mcq = make_seed("图中有几只狗？", kind=Item.Kind.MCQ)
    dialogue = make_seed("那里有几棵树？", kind=Item.Kind.MULTI_TURN)
    make_seed("图中有几只鸟？", status="answered")
    declare()
    fake_llm.script("glm-4", lambda body: five(question_of(body)))
    assert list(services.eligible_seeds(benchmark)) == [single]
    assert list(services.eligible_seeds(benchmark, include_mcq=True)) == [single, mcq]
    with pytest.raises(DomainError, match="multi-turn items are never rewritten"):
        services.estimate_batch(benchmark, endpoint="glm", template_version=zh_template, items=[dialogue.pk])
    batch = start(benchmark, researcher, zh_template, include_mcq=True)
    assert set(BatchSeed.objects.filter(batch=batch).values_list("item_id", flat=True)) == {single.pk, mcq.pk}
    mcq_prompt = next(b for b in fake_llm.requests("glm-4") if "狗" in b["messages"][0]["content"])
    assert "A. 两只\nB. 三只" in mcq_prompt["messages"][0]["content"]
    # Seeds already in a batch are left out of the next one unless named.
    with pytest.raises(DomainError, match="No seed to rewrite"):
        services.estimate_batch(benchmark, endpoint="glm", template_version=zh_template, include_mcq=True)
    again = start(benchmark, researcher, zh_template, items=[single.pk])
    assert again.number == batch.number + 1 and again.seeds.count() == 1


def test_only_researchers_start_batches_and_problems_are_refused_before_anything_is_stored(
    declare, fake_llm, benchmark, seeds, zh_template, researcher, reviewer
):
    declare()
    with pytest.raises(NotAllowed):
        start(benchmark, reviewer, zh_template)
    with pytest.raises(DomainError, match="No LLM endpoint named 'nope'"):
        start(benchmark, researcher, zh_template, endpoint="nope")
    with pytest.raises(DomainError, match="1 to 10 rewrites"):
        start(benchmark, researcher, zh_template, n=0)
    assert not RewriteBatch.objects.exists() and not Job.objects.exists() and fake_llm.requests() == []


def test_the_api_estimates_starts_and_reports_a_batch_and_edits_templates(
    declare, fake_llm, seeds, api_for, researcher, reviewer
):
    declare(input_cost_per_mtok=1.0, output_cost_per_mtok=1.0)
    fake_llm.script("glm-4", lambda body: five(question_of(body)))
    api = api_for(researcher)
    assert api.get("/api/v1/benchmarks/demo/rewrite/templates/").json() == []  # a GET writes nothing
    first = api.post("/api/v1/benchmarks/demo/rewrite/estimate/", {"endpoint": "glm"}, format="json").json()
    assert first["seeds"] == 5  # the default Chinese template, created with the first estimate
    templates = api.get("/api/v1/benchmarks/demo/rewrite/templates/").json()
    assert [t["language"] for t in templates] == ["en", "zh"] and all(len(t["versions"]) == 1 for t in templates)
    zh = next(t for t in templates if t["language"] == "zh")
    edited = api.post(
        f"/api/v1/benchmarks/demo/rewrite/templates/{zh['id']}/versions/",
        {"text": "把这个问题换{count}种说法，每行一个：{question}", "note": "shorter"},
        format="json",
    )
    assert edited.status_code == 201 and edited.json()["number"] == 2
    assert (
        api_for(reviewer)
        .post(f"/api/v1/benchmarks/demo/rewrite/templates/{zh['id']}/versions/", {"text": "{question}"}, format="json")
        .status_code
        == 403
    )
    body = {"endpoint": "glm", "template_version": edited.json()["id"], "temperature": 0.7}
    estimate = api.post("/api/v1/benchmarks/demo/rewrite/estimate/", body, format="json").json()
    assert estimate["seeds"] == estimate["calls"] == 5 and estimate["cost"] > 0
    assert api_for(reviewer).post("/api/v1/benchmarks/demo/rewrite/batches/", body, format="json").status_code == 403
    started = api.post("/api/v1/benchmarks/demo/rewrite/batches/", body, format="json")
    assert started.status_code == 201, started.json()
    batch = api.get(f"/api/v1/benchmarks/demo/rewrite/batches/{started.json()['number']}/").json()
    assert batch["status"] == "finished" and batch["template_version"] == 2 and batch["seeds"]["done"] == 5
    assert (
        batch["usage"]["requests"] == 5
        and batch["estimate"]["cost"] == estimate["cost"]
        and batch["params"] == {"temperature": 0.7}
    )
    assert all(
        b["temperature"] == 0.7 and b["messages"][0]["content"].startswith("把这个问题换五种说法")
        for b in fake_llm.requests("glm-4")
    )
    again = api.post("/api/v1/benchmarks/demo/rewrite/batches/", body, format="json")
    assert again.status_code == 400 and "No seed to rewrite" in again.json()["detail"]
