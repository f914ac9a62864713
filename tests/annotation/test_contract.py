"""The item contract: one list of fields, and conversions that agree with each other and with the
harness. Items written out as a release's items.jsonl are read back by the harness's own loader."""

import base64
import csv
import io
import json

import pytest
from django.core.files.storage import default_storage

from annotation import contract
from annotation.models import Item
from annotation.selectors import with_payload_data
from annotation.services import create_item, update_item
from benchforge_harness.release import load_release
from curation import services as curation
from labelstudio.adapter import task_for_item
from tests.factories import jpeg

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]


@pytest.fixture
def items(benchmark, annotator, researcher):
    counting, coherence = benchmark.tasks.get(slug="counting"), benchmark.tasks.get(slug="coherence")
    images = [curation.ingest_image(benchmark, jpeg(7100 + n), tasks=[counting]).image for n in range(2)]
    curation.screen_images(benchmark, [i.pk for i in images], action="accept", user=researcher)

    def make(**fields):
        item = create_item(benchmark, task=fields.pop("task", counting), user=annotator, seed=fields.pop("seed", None))
        return update_item(item, fields, expected_version=item.version, user=annotator) if fields else item

    seed = make(
        question="How many apples?",
        reference_answer="Three red apples.",
        description="A table with fruit.",
        images=[images[0].pk, images[1].pk],
        criteria=[{"kind": "exact", "text": "three"}, {"kind": "guideline", "text": "mentions colour"}],
    )
    rewrite = make(seed=seed, question="Count the apples, please.")
    dialogue = make(
        task=coherence,
        kind="multi_turn",
        question="And the second one?",
        history=[{"role": "user", "content": "What is first?"}, {"role": "assistant", "content": "A cat."}],
        incoherent=True,
        reference_answer="A dog.",
        criteria=[{"kind": "soft", "text": "names an animal"}],
        images=[images[1].pk],
    )
    mcq = make(
        kind="mcq",
        question="Which fruit?",
        hint="Look at the colour.",
        choices=["Apple", "Pear", "Plum"],
        answer="B",
        reference_answer="Pear.",
        criteria=[{"kind": "exact", "text": "B"}],
        images=[images[0].pk],
    )
    loaded = {i.pk: i for i in with_payload_data(Item.objects.filter(benchmark=benchmark))}
    return {name: loaded[i.pk] for name, i in {"seed": seed, "rewrite": rewrite, "dialogue": dialogue, "mcq": mcq}.items()}


def test_the_field_lists_match_the_model_and_each_other():
    model_fields = {f.name for f in Item._meta.get_fields()}
    assert set(contract.SCALAR_FIELDS) <= model_fields and "task" in model_fields
    assert set(contract.SEED_ONLY_FIELDS) <= set(contract.EDITABLE_FIELDS)
    assert set(contract.FIELD_LABELS) == {*contract.EDITABLE_FIELDS, "status"}


def test_snapshot_and_payload_agree_on_every_field(items):
    seed = items["seed"]
    snapshot, payload = contract.item_snapshot(seed), contract.item_payload(seed)
    for name in contract.SCALAR_FIELDS:
        assert snapshot[name] == payload[name], name
    assert snapshot["images"] == [image["id"] for image in payload["images"]]
    assert snapshot["criteria"] == payload["criteria"]
    assert all(image["url"].startswith("/media/images/") for image in payload["images"])
    # A rewrite shows its seed's shared fields and stores none of them.
    rewrite = contract.item_payload(items["rewrite"])
    assert (rewrite["reference_answer"], rewrite["criteria"], rewrite["images"]) == (
        payload["reference_answer"],
        payload["criteria"],
        payload["images"],
    )
    assert contract.item_snapshot(items["rewrite"])["reference_answer"] == ""


def test_a_release_written_from_the_contract_loads_in_the_harness(items, tmp_path):
    (tmp_path / "images").mkdir()
    rows = []
    for name, item in items.items():
        row = contract.release_row(item, split="test" if name == "mcq" else "dev")
        for relative, link in zip(row["images"], (item.seed or item).item_images.all()):
            with default_storage.open(link.image.file.name) as handle:
                (tmp_path / relative).write_bytes(handle.read())
        rows.append(row)
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))

    release = load_release(tmp_path)
    got = {i.id: i for i in release.items}
    seed, rewrite, dialogue, mcq = (got[contract.release_id(items[n])] for n in ("seed", "rewrite", "dialogue", "mcq"))
    assert seed.question == "How many apples?" and seed.reference_answer == "Three red apples."
    assert seed.criteria == ("three", "mentions colour") and seed.description == "A table with fruit."
    assert seed.category == "感知与理解" and seed.task == "计数" and seed.question_type == "open-ended"
    assert len(seed.images) == 2 and all(release.image_path(p).is_file() for p in seed.images)
    # The rewrite forms one alignment group with its seed and shares its answer, criteria and images.
    assert rewrite.seed_id == seed.id and rewrite.group == seed.group
    assert (rewrite.reference_answer, rewrite.criteria, rewrite.images) == (seed.reference_answer, seed.criteria, seed.images)
    assert dialogue.history == ({"role": "user", "content": "What is first?"}, {"role": "assistant", "content": "A cat."})
    assert dialogue.meta["incoherent"] is True and dialogue.task == "对话连贯性"
    assert mcq.is_mcq and mcq.choices == {"A": "Apple", "B": "Pear", "C": "Plum"} and mcq.answer == "B"
    assert mcq.hint == "Look at the colour." and mcq.question_type == "multiple-choice" and mcq.split == "test"
    assert seed.meta["criteria_kinds"] == ["exact", "guideline"]


def test_a_public_row_withholds_what_the_release_keeps_private(items):
    row = contract.release_row(items["mcq"], withhold=frozenset({"answer", "reference_answer", "criteria"}))
    assert row["answer"] is None and row["reference_answer"] is None and row["criteria"] == []
    assert row["meta"]["criteria_kinds"] == [] and row["choices"] == {"A": "Apple", "B": "Pear", "C": "Plum"}
    text = json.dumps(row)
    assert "Pear." not in text and '"B"' not in text.replace('"B": "Pear"', "")


def test_mmbench_rows_round_trip_through_a_tsv(items):
    image = base64.b64encode(b"fake image bytes").decode()
    rows = [contract.mmbench_row(items["mcq"], index=0, image=image, split="dev")]
    rows.append(contract.mmbench_row(items["mcq"], index=1, image="0", withhold_answer=True))  # shares row 0's image
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=contract.MMBENCH_COLUMNS, delimiter="\t", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    back = list(csv.DictReader(io.StringIO(out.getvalue()), delimiter="\t"))
    assert tuple(back[0]) == contract.MMBENCH_COLUMNS
    assert [back[0][c] for c in ("question", "hint", "A", "B", "C", "D", "answer")] == [
        "Which fruit?",
        "Look at the colour.",
        "Apple",
        "Pear",
        "Plum",
        "",
        "B",
    ]
    assert (back[0]["category"], back[0]["l2-category"], back[0]["split"]) == ("计数", "感知与理解", "dev")
    assert base64.b64decode(back[0]["image"]) == b"fake image bytes" and back[1]["image"] == "0" and back[1]["answer"] == ""
    with pytest.raises(ValueError, match="not multiple-choice"):
        contract.mmbench_row(items["seed"], index=2, image=image)


def test_the_label_studio_task_shows_the_contract_data(items):
    payload = contract.item_payload(items["mcq"])
    task = task_for_item(payload, image_src=lambda image: f"img:{image['id']}")
    assert task["data"] == contract.labelstudio_data(payload, image_src=lambda image: f"img:{image['id']}")
    assert task["data"]["options"] == "Hint: Look at the colour.\nA. Apple\nB. Pear\nC. Plum"
