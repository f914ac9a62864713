"""The demo rewrites: a finished batch of canned messy replies, one approval, one rejection; idempotent."""

from annotation.models import Item
from rewrite.demo import add_demo
from rewrite.models import BatchSeed, RawReply, Rewrite, RewriteBatch
from tests.factories import make_image


def test_the_demo_writes_seeds_on_unused_pictures_once(benchmark, counting, annotator, reviewer, researcher):
    make_image(benchmark, tasks=[counting])
    make_image(benchmark, tasks=[counting])
    users = {"annotator": annotator, "reviewer": reviewer, "researcher": researcher}
    message = add_demo(benchmark, users)
    assert message.startswith("rewrite demo: batch 1 with 8 rewrites of 2 seeds")
    batch = RewriteBatch.objects.get()
    assert batch.status == "finished" and batch.job is None
    assert sorted(BatchSeed.objects.values_list("state", flat=True)) == ["done", "manual"]
    assert RawReply.objects.count() == 3 and RawReply.objects.filter(dropped=[]).count() == 1
    assert sorted(Rewrite.objects.values_list("state", flat=True)) == [
        "approved",
        "pending",
        "pending",
        "pending",
        "pending",
        "pending",
        "pending",
        "rejected",
    ]
    assert Item.objects.filter(seed__isnull=False).count() == 1 and Item.objects.filter(status="rewritten").count() == 1
    assert add_demo(benchmark, users) == "rewrite demo: already there" and Rewrite.objects.count() == 8
