"""The Parquet export as a complete Hugging Face dataset page: the card's metadata (licence,
languages, task categories, size, name) read by huggingface_hub's own card classes, the
release's card below it, and the folder loading with `datasets`. Offline throughout."""

import os
import subprocess
import sys
import zipfile

import pytest

from exports.parquet import hub_license, question_language, size_category

from .conftest import stored


@pytest.fixture
def hub_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")


def test_the_parquet_card_carries_the_hub_metadata_and_the_release_card(built, benchmark, accepted, tmp_path, hub_offline):
    import datasets  # test dependencies (datasets brings huggingface_hub): never skipped
    import huggingface_hub

    from curation.models import Image

    for n, image in enumerate(Image.objects.filter(benchmark=benchmark).order_by("pk")):
        image.license = ["CC BY 4.0", "CC0 1.0", ""][n % 3]  # each image its own licence (one not recorded)
        image.save(update_fields=["license"])
    release = built(private=["test_answers", "reference_answers", "criteria"])
    with zipfile.ZipFile(stored(release, "parquet")) as archive:
        archive.extractall(tmp_path)
    root = tmp_path / release.top

    card = huggingface_hub.DatasetCard.load(root / "README.md")
    assert card.data.license == "cc-by-nc-sa-4.0"  # the release's "CC BY-NC-SA 4.0"
    assert card.data.language == ["en"]
    assert card.data.task_categories == ["visual-question-answering", "multiple-choice"]
    assert card.data.size_categories == ["n<1K"]
    assert card.data.pretty_name == f"{release.benchmark.name} {release.version}"
    assert [c["split"] for c in card.data.configs[0]["data_files"]] == ["dev", "test"]
    # Below the metadata, the card of this export, with the chart it shows: not the bundle's card.
    assert f"# {release.benchmark.name} {release.version}" in card.text
    assert "## What is withheld" in card.text and "test split: withholds" in card.text
    assert "SECRET-REFERENCE" not in card.text
    assert (root / "charts" / "items_per_task.svg").read_text(encoding="utf-8").startswith("<svg")
    for bundle_only in ("This is the **public** bundle", "## Files", "`items.jsonl`", "see `LICENSE`"):
        assert bundle_only not in card.text, bundle_only
    assert "## Splits" in card.text and "## Columns" in card.text and "## Loading" in card.text
    assert "## Scoring with the harness" in card.text and f"{release.top}-public.tar.gz" in card.text

    loaded = datasets.load_dataset(str(root), cache_dir=str(tmp_path / "cache"))
    assert set(loaded) == {"dev", "test"}
    assert loaded["dev"].features["images"].feature.__class__.__name__ == "Image"
    assert loaded["dev"][0]["images"][0].size == (640, 520)
    # dataset_info: every column's feature as `datasets` loads it, and each split's rows.
    info = card.data.dataset_info
    assert datasets.Features._from_yaml_list(info["features"]) == loaded["dev"].features
    assert {s["name"]: s["num_examples"] for s in info["splits"]} == {split: len(loaded[split]) for split in loaded}
    documented = {line.split("`")[1] for line in card.text.splitlines() if line.startswith("| `")}
    assert documented == set(loaded["dev"].features)  # every column described, none invented
    # Each image's licence in a column (and the release's licence on the card).
    licences = dict(release.images.values_list("name", "license"))
    images_of = dict(release.items.values_list("key", "row__images"))
    for split in loaded:
        for row in loaded[split]:
            assert row["image_licenses"] == [licences[image] for image in images_of[row["id"]]]
    assert {"CC BY 4.0", "CC0 1.0", ""} == set(licences.values())
    assert all(f"- {name or 'license not recorded'}: " in card.text for name in licences.values())
    assert "CC BY-NC-SA 4.0" in card.text
    # The loading snippet runs as shown, from the folder.
    snippet = card.text.split("```python")[1].split("```")[0].replace("path/to/this/folder", str(root))
    snippet += "\nassert {s: len(d) for s, d in dataset.items()} == " + repr({s: len(loaded[s]) for s in loaded})
    env = {**os.environ, "HF_DATASETS_CACHE": str(tmp_path / "cache"), "HF_HOME": str(tmp_path / "hf")}
    ran = subprocess.run([sys.executable, "-c", snippet], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "Ignoring part of dataset_info" not in ran.stderr and "malformed" not in ran.stderr  # read whole by datasets


@pytest.mark.parametrize(
    "text, fields",
    [
        ("CC BY-NC-SA 4.0", {"license": "cc-by-nc-sa-4.0"}),
        ("CC-BY-4.0", {"license": "cc-by-4.0"}),
        ("MIT License", {"license": "mit"}),
        ("Apache 2.0", {"license": "apache-2.0"}),
        ("CC0", {"license": "cc0-1.0"}),
        ("Research use only (see terms)", {"license": "other", "license_name": "research-use-only-see-terms"}),
        ("", {"license": "other", "license_name": "unspecified"}),
    ],
)
def test_a_release_licence_becomes_the_hub_identifier_or_other_with_its_name(text, fields):
    assert hub_license(text) == fields


def test_languages_come_from_the_questions_writing_system_and_sizes_from_the_row_count():
    assert question_language("图中有几个苹果？") == "zh"
    assert question_language("How many apples? 苹果") == "zh"  # Han text in the question: Chinese
    assert question_language("りんごはいくつ？") == "ja"
    assert question_language("사과가 몇 개?") == "ko"
    assert question_language("How many apples?") == "en"
    assert question_language("12 + 7 = ?") is None
    assert [size_category(n) for n in (0, 999, 1000, 25_000, 2_000_000)] == ["n<1K", "n<1K", "1K<n<10K", "10K<n<100K", "n>1M"]
