"""Verification: approve (an accepted item of the seed; the seed's first approval moves it to
rewritten), reject with a reason, edit, manual rewrites; provenance and the numbers; the API and
the pages."""

import pytest

from annotation.contract import item_payload
from annotation.models import Item, ItemRevision
from benchforge.errors import Conflict, DomainError, NotAllowed
from rewrite import selectors, services
from rewrite.models import BatchSeed, RawReply, Rewrite, RewriteBatch


@pytest.fixture
def batch(benchmark, zh_template, researcher):
    return RewriteBatch.objects.create(
        benchmark=benchmark, number=1, endpoint="glm", model="glm-4", template_version=zh_template, created_by=researcher
    )


@pytest.fixture
def candidates(make_seed, batch):
    seed = make_seed("图中有几只猫？")
    batch_seed = BatchSeed.objects.create(batch=batch, item=seed, state="done", valid=3)
    reply = RawReply.objects.create(batch_seed=batch_seed, attempt=1, text="...")
    texts = ["图片里一共有多少只猫？", "请数一数画面中的猫有几只。", "这张照片上能看到几只猫呢？"]
    rows = [Rewrite.objects.create(seed=seed, batch=batch, reply=reply, position=i, text=t) for i, t in enumerate(texts)]
    return seed, rows


def test_approving_makes_an_item_sharing_the_seed_answer_and_moves_the_seed_once(candidates, reviewer, researcher):
    seed, (first, second, _third) = candidates
    item = services.approve(first, user=reviewer)
    item = Item.objects.get(pk=item.pk)
    seed.refresh_from_db()
    assert item.seed_id == seed.pk and item.status == "accepted" and item.author == reviewer and item.question == first.text
    assert item.task_id == seed.task_id and item.kind == seed.kind and item.reference_answer == ""
    payload = item_payload(item)
    assert payload["reference_answer"] == seed.reference_answer and payload["criteria"] == [
        {"kind": "exact", "text": "The count is three."}
    ]
    assert seed.status == "rewritten" and seed.revisions.filter(action="rewritten").count() == 1
    assert ItemRevision.objects.get(item=item).action == "rewritten"
    version = seed.version
    services.approve(second, user=reviewer)
    seed.refresh_from_db()
    assert seed.status == "rewritten" and seed.version == version  # only the first approval moves it
    first.refresh_from_db()
    assert first.state == "approved" and first.item_id == item.pk and first.decided_by == reviewer
    # Approving again (a double click) is the same approval; anything else is refused: it is final.
    assert services.approve(first, user=reviewer).pk == item.pk
    assert seed.rewrites.count() == 2
    with pytest.raises(Conflict, match="already approved by rita .* an approval is final"):
        services.approve(first, user=researcher)
    with pytest.raises(Conflict, match="an approval is final"):
        services.reject(first, user=reviewer, reason="not_fluent")


def test_rejecting_needs_a_reason_other_needs_a_comment_and_a_rejection_can_be_reconsidered(candidates, reviewer):
    _seed, (first, _second, _third) = candidates
    with pytest.raises(DomainError, match="Choose a reason"):
        services.reject(first, user=reviewer, reason="ugly")
    with pytest.raises(DomainError, match="needs a comment"):
        services.reject(first, user=reviewer, reason="other")
    rejected = services.reject(first, user=reviewer, reason="too_similar_seed")
    assert rejected.state == "rejected" and rejected.reason == "too_similar_seed"
    item = services.approve(first, user=reviewer)  # reconsidered
    first.refresh_from_db()
    assert first.state == "approved" and first.reason == "" and first.item_id == item.pk


@pytest.fixture
def second_reviewer(make_user, benchmark):
    return make_user("reviewer", "vera", benchmarks=[benchmark])


def test_editing_keeps_the_model_text_and_updates_the_similarity(candidates, reviewer, second_reviewer):
    seed, (first, _second, _third) = candidates
    services.reject(first, user=reviewer, reason="not_fluent")
    edited = services.edit(first, user=reviewer, text="图中有几只猫呢？")
    assert edited.edited and edited.original_text == "图片里一共有多少只猫？" and edited.state == "pending"
    assert edited.similarity_seed >= 0.8 and edited.near_copy
    again = services.edit(edited, user=reviewer, text="这幅图里能数出几只猫？")
    assert again.original_text == "图片里一共有多少只猫？" and not again.near_copy
    with pytest.raises(DomainError, match="cannot be empty"):
        services.edit(first, user=reviewer, text="   ")
    item = services.approve(first, user=second_reviewer)
    item = Item.objects.get(pk=item.pk)
    assert item.question == "这幅图里能数出几只猫？" and item.author == reviewer  # the words are the editor's
    assert selectors.provenance([item.pk])[item.pk]["edited"] is True


def test_nobody_approves_words_they_wrote_or_edited(candidates, reviewer, second_reviewer, researcher):
    seed, (first, second, third) = candidates
    services.edit(first, user=reviewer, text="这幅图里能数出几只猫？")
    manual = services.add_manual(seed, user=second_reviewer, text="你数得出图上有几只猫吗？")
    with pytest.raises(NotAllowed, match=f"Rewrite #{first.pk} is your own work: someone else approves it"):
        services.approve(first, user=reviewer)
    with pytest.raises(NotAllowed, match="your own work"):
        services.approve(manual, user=second_reviewer)
    assert not Item.objects.filter(seed=seed).exists()
    # Each still rejects their own (taking it back), and the queue offers them only others' work.
    assert selectors.next_seed(seed.benchmark, user=reviewer) == seed  # second, third and the manual one
    for rewrite in (second, third, manual):
        services.reject(rewrite, user=researcher, reason="not_fluent")
    assert selectors.next_seed(seed.benchmark, user=reviewer) is None
    assert selectors.next_seed(seed.benchmark, user=second_reviewer) == seed  # first, edited by reviewer
    # Someone else's edit of a model's text: the model's words are nobody's, the edit is the editor's.
    services.edit(first, user=second_reviewer, text="图上有多少只猫，你能数出来吗？")
    item = services.approve(first, user=reviewer)
    assert Item.objects.get(pk=item.pk).author == second_reviewer


def test_manual_rewrites_are_verified_like_the_others(candidates, reviewer, second_reviewer, make_seed):
    seed, _rows = candidates
    manual = services.add_manual(seed, user=reviewer, text="你数得出图上有几只猫吗？")
    assert manual.source == "manual" and manual.state == "pending" and manual.batch is None and 0 < manual.similarity_seed < 0.8
    with pytest.raises(DomainError, match="already has that rewrite"):
        services.add_manual(seed, user=reviewer, text="「你数得出图上有几只猫吗」")
    with pytest.raises(DomainError, match="the seed question itself"):
        services.add_manual(seed, user=reviewer, text="图中有几只猫?")
    dialogue = make_seed("那里有几棵树？", kind=Item.Kind.MULTI_TURN)
    with pytest.raises(DomainError, match="Multi-turn"):
        services.add_manual(dialogue, user=reviewer, text="那边有多少棵树？")
    item = services.approve(manual, user=second_reviewer)
    assert Item.objects.get(pk=item.pk).author == reviewer
    assert selectors.provenance([item.pk]) == {
        item.pk: {"batch": None, "batch_number": None, "model": None, "endpoint": None, "template": None,
                  "template_version": None, "source": "manual", "edited": False},
    }  # fmt: skip


def test_only_member_reviewers_verify_and_a_seed_that_moved_on_cannot_take_rewrites(
    candidates, annotator, outsider, make_user, reviewer
):
    from annotation.services import change_status

    seed, (first, _second, _third) = candidates
    with pytest.raises(NotAllowed, match="reviewer or researcher role"):
        services.approve(first, user=annotator)
    stranger = make_user("reviewer", "stan")
    with pytest.raises(NotAllowed, match="not a member"):
        services.reject(first, user=stranger, reason="not_fluent")
    change_status(seed, "revision", user=reviewer, action="reviewed")
    with pytest.raises(DomainError, match="can be verified only while it is accepted"):
        services.approve(first, user=reviewer)
    assert not Item.objects.filter(seed=seed).exists()


def test_provenance_and_stats(candidates, reviewer, batch, zh_template):
    seed, (first, second, third) = candidates
    item = services.approve(first, user=reviewer)
    services.reject(second, user=reviewer, reason="meaning_changed")
    services.reject(third, user=reviewer, reason="other", comment="answers the question")
    assert selectors.provenance([item.pk, seed.pk]) == {
        item.pk: {"batch": batch.pk, "batch_number": 1, "model": "glm-4", "endpoint": "glm", "template": zh_template.template.name,
                  "template_version": 1, "source": "llm", "edited": False},
    }  # fmt: skip
    stats = selectors.rewrite_stats(seed.benchmark)
    assert stats["seeds_rewritten"] == 1 and stats["generated"] == 3 and stats["approved"] == 1 and stats["rejected"] == 2
    assert stats["rejected_by_reason"] == {
        "meaning_changed": 1, "not_fluent": 0, "too_similar_seed": 0, "too_similar_sibling": 0, "other": 1,
    }  # fmt: skip
    assert stats["approved_per_seed"] == {"1": 1} and stats["mean_approved_per_seed"] == 1.0 and stats["seeds_in_batches"] == 1
    assert selectors.rewrite_count(seed) == {"is_rewrite": False, "approved": 1, "pending": 0, "rejected": 2}


def test_templates_are_versioned_and_edited_by_researchers(benchmark, researcher, reviewer):
    zh, en = services.ensure_default_templates(benchmark)
    assert services.ensure_default_templates(benchmark) == [zh, en] and zh.versions.count() == 1
    assert "{question}" in zh.latest.text and zh.language == "zh" and en.language == "en"
    with pytest.raises(NotAllowed):
        services.add_version(zh, user=reviewer, text="{question}")
    v2 = services.add_version(zh, user=researcher, text="改写{question}为{n}种", note="shorter")
    assert v2.number == 2 and zh.latest == v2
    assert services.add_version(zh, user=researcher, text="改写{question}为{n}种") == v2  # same text: no new version
    with pytest.raises(DomainError, match="must contain"):
        services.add_version(zh, user=researcher, text="no question here")
    mine = services.create_template(benchmark, user=researcher, name="polite", language="en", text="Politely: {question}")
    assert mine.latest.number == 1
    with pytest.raises(DomainError, match="already has a template"):
        services.create_template(benchmark, user=researcher, name="polite", language="en", text="{question}")


# ---------------------------------------------------------------- API and pages


def test_the_api_verifies_and_reports(candidates, api_for, reviewer, annotator, researcher):
    seed, (first, second, _third) = candidates
    api = api_for(reviewer)
    rows = api.get(f"/api/v1/benchmarks/demo/rewrite/seeds/{seed.pk}/rewrites/").json()
    assert [r["text"] for r in rows] == [first.text, second.text, _third.text] and rows[0]["batch"] == 1
    done = api.post(f"/api/v1/benchmarks/demo/rewrite/rewrites/{first.pk}/approve/")
    assert done.status_code == 200 and done.json()["state"] == "approved" and done.json()["item"]
    again = api.post(f"/api/v1/benchmarks/demo/rewrite/rewrites/{first.pk}/approve/")
    assert again.status_code == 200 and again.json()["item"] == done.json()["item"]  # the same approval, once
    other = api_for(researcher).post(f"/api/v1/benchmarks/demo/rewrite/rewrites/{first.pk}/approve/")
    assert other.status_code == 409 and "final" in other.json()["detail"]
    bad = api.post(f"/api/v1/benchmarks/demo/rewrite/rewrites/{second.pk}/reject/", {"reason": "other"}, format="json")
    assert bad.status_code == 400 and "comment" in bad.json()["detail"]
    ok = api.post(f"/api/v1/benchmarks/demo/rewrite/rewrites/{second.pk}/reject/", {"reason": "not_fluent"}, format="json")
    assert ok.json()["reason"] == "not_fluent"
    added = api.post(f"/api/v1/benchmarks/demo/rewrite/seeds/{seed.pk}/rewrites/", {"text": "图上的猫有几只？"}, format="json")
    assert added.status_code == 201 and added.json()["source"] == "manual"
    stats = api.get("/api/v1/benchmarks/demo/rewrite/stats/").json()
    assert stats["approved"] == 1 and stats["rejected_by_reason"]["not_fluent"] == 1 and stats["manual"] == 1
    assert api.get("/api/v1/benchmarks/demo/rewrite/batches/").json()[0]["seeds"]["done"] == 1
    assert api_for(annotator).get("/api/v1/benchmarks/demo/rewrite/stats/").status_code == 403


def test_pages_show_batches_the_verification_page_and_the_item_count(candidates, client_for, reviewer, researcher, annotator):
    seed, (first, second, _third) = candidates
    services.approve(first, user=reviewer)
    page = client_for(reviewer).get(f"/b/demo/rewrite/seeds/{seed.pk}/?order=similarity").content.decode()
    assert "图片里一共有多少只猫？" in page and 'id="rewrite-list"' in page and "verify.js" in page
    response = client_for(reviewer).post(
        f"/b/demo/rewrite/seeds/{seed.pk}/", {"action": "reject", "rewrite": second.pk, "reason": "not_fluent"}
    )
    assert response.status_code == 302 and response["Location"].endswith(f"#rewrite-{second.pk}")
    bad = client_for(reviewer).post(f"/b/demo/rewrite/seeds/{seed.pk}/", {"action": "approve", "rewrite": "9" * 30})
    assert bad.status_code == 302 and not bad["Location"].endswith("#")  # a clear message, not a 500
    second.refresh_from_db()
    assert second.state == "rejected"
    home = client_for(researcher).get("/b/demo/rewrite/").content.decode()
    assert 'id="batch-form"' in home and 'id="stats-approved">1<' in home
    assert 'id="batch-form"' not in client_for(reviewer).get("/b/demo/rewrite/").content.decode()
    assert client_for(reviewer).post("/b/demo/rewrite/", {"action": "start"}).status_code == 403
    assert client_for(annotator).get("/b/demo/rewrite/").status_code in (302, 403)
    fragment = client_for(annotator).get(f"/b/demo/items/{seed.pk}/rewrites/").content.decode()
    assert 'id="item-rewrite-count">1<' in fragment
    dashboard = client_for(annotator).get("/b/demo/").content.decode()
    assert 'id="rewrite-overview"' in dashboard and 'id="stats-approved">1<' in dashboard
    assert client_for(reviewer).get("/b/demo/rewrite/batches/1/").status_code == 200
    assert client_for(reviewer).get("/b/demo/rewrite/templates/").status_code == 200
