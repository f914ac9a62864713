"""benchforge.permissions: who may see a benchmark, edit, take back and review an item, act as a
researcher; and the answers the pages and the API give from it."""

import pytest

from annotation.models import Item
from annotation.services import create_item
from benchforge import permissions
from curation.models import Benchmark

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(make_user, benchmark, outsider):
    return {
        "author": make_user("annotator", "ada", benchmarks=[benchmark]),
        "assignee": make_user("annotator", "abe", benchmarks=[benchmark]),
        "colleague": make_user("annotator", "cal", benchmarks=[benchmark]),
        "reviewer": make_user("reviewer", "rex", benchmarks=[benchmark]),
        "researcher": make_user("researcher", "ria"),
        "outsider": outsider,
        "nobody": make_user("annotator", "nia"),
    }


@pytest.fixture
def item(benchmark, counting, people):
    made = create_item(benchmark, task=counting, user=people["author"], assignee=people["assignee"])
    return Item.objects.select_related("author", "benchmark").get(pk=made.pk)


def test_editing_follows_ownership_stage_and_release(item, people):
    refusal = permissions.item_edit_refusal
    assert refusal(people["author"], item) is None and refusal(people["assignee"], item) is None
    assert refusal(people["researcher"], item) is None
    assert "is not yours (it is ada's)" in refusal(people["colleague"], item)
    assert "not a member" in refusal(people["outsider"], item)
    item.status = "answered"
    assert "'Answered': only drafts and items sent back for revision" in refusal(people["author"], item)
    assert refusal(people["researcher"], item) is None  # researchers correct later stages
    item.status = "released"
    assert "released items never change" in refusal(people["researcher"], item)


def test_nobody_reviews_their_own_work(item, people):
    from benchforge.roles import set_role

    refusal = permissions.item_review_refusal
    assert refusal(people["reviewer"], item) is None and refusal(people["researcher"], item) is None
    assert "needs the reviewer or researcher role" in refusal(people["colleague"], item)
    set_role(people["author"], "reviewer")  # promoted, the author still may not review what they wrote
    assert "your own work" in refusal(people["author"], item)
    set_role(people["assignee"], "reviewer")
    assert "your own work" in refusal(people["assignee"], item)


def test_taking_back_a_submitted_item(item, people):
    assert permissions.item_withdraw_refusal(people["assignee"], item) is None
    assert permissions.item_withdraw_refusal(people["researcher"], item) is None
    assert "Only the author, the assignee or a researcher" in permissions.item_withdraw_refusal(people["colleague"], item)


def test_benchmark_visibility_scope(benchmark, private_benchmark, people):
    def seen(user):
        return sorted(permissions.visible(Benchmark.objects.all(), user).values_list("slug", flat=True))

    assert seen(people["researcher"]) == ["demo", "private"]
    assert seen(people["author"]) == ["demo"] and seen(people["outsider"]) == ["private"] and seen(people["nobody"]) == []
    from django.contrib.auth import get_user_model

    roleless = get_user_model().objects.create_user("roleless")
    assert seen(roleless) == [] and permissions.benchmark_scope(roleless) is None
    assert permissions.is_member(people["researcher"], benchmark) and not permissions.is_member(people["outsider"], benchmark)


def test_researcher_actions_are_refused_with_the_role_named(people, api_for, client_for, benchmark):
    with pytest.raises(Exception, match="Assigning work needs the researcher role"):
        permissions.require_researcher(people["reviewer"], "Assigning work")
    response = api_for(people["reviewer"]).post("/api/v1/benchmarks/", {"name": "X"}, format="json")
    assert response.status_code == 403 and response.json()["detail"] == "Creating a benchmark needs the researcher role."
    page = client_for(people["author"]).get(f"/b/{benchmark.slug}/")
    assert page.context["is_researcher"] is False and page.context["user_role"] == "annotator"
