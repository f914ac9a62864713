"""What a release withholds: nothing of it in any byte of any public file (archives unpacked,
Parquet read back, the MMBench TSV, the card), all of it in the private bundle, for the default
and for every combination of parts; the dev split complete under the default."""

import csv
import io
import json
import zipfile
from itertools import combinations
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from annotation import withholding
from benchforge_harness.bundle import iter_bytes
from exports import parquet, services
from exports.models import Release, ReleaseFile
from tests.exports.conftest import stored

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]

PUBLIC_KINDS = (ReleaseFile.Kind.PUBLIC_TAR, ReleaseFile.Kind.PUBLIC_ZIP, ReleaseFile.Kind.PARQUET)


def expected_hidden(private, split: str) -> set[str]:
    """What the parts mean, written out here (not read from the module under test)."""
    hidden = set()
    if split == "test" and "test_answers" in private:
        hidden.add("answer")
    if "reference_answers" in private or (split == "test" and "test_references" in private):
        hidden.add("reference_answer")
    if "criteria" in private or (split == "test" and "test_criteria" in private):
        hidden.add("criteria")
    return hidden


def members(path: Path) -> dict[str, bytes]:
    """Every file of an archive, a zip inside it unpacked too."""
    found = {}
    for name, content in iter_bytes(path):
        found[name] = content
        if name.endswith(".zip"):
            with zipfile.ZipFile(io.BytesIO(content)) as inner:
                found.update({f"{name}/{n}": inner.read(n) for n in inner.namelist()})
    return found


def readable(name: str, content: bytes) -> list[bytes]:
    """The bytes of a file, and for Parquet (compressed) its values as JSON text too."""
    texts = [content]
    if name.endswith(".parquet"):
        table = pq.read_table(io.BytesIO(content)).drop_columns(["images"])
        texts.append(json.dumps(table.to_pylist(), ensure_ascii=False).encode())
        texts.append(json.dumps(table.to_pylist()).encode())
    return texts


def structured_rows(files: dict[str, bytes]) -> list[tuple[str, dict]]:
    """(where, row) for each question of items.jsonl, mcq.tsv and the Parquet files."""
    rows = []
    for name, content in files.items():
        if name.endswith("items.jsonl"):
            rows += [(name, json.loads(line)) for line in content.decode().splitlines()]
        elif name.endswith("mcq.tsv"):
            for row in csv.DictReader(io.StringIO(content.decode()), delimiter="\t"):
                rows.append((name, {"split": row["split"], "answer": row["answer"] or None, "choices": True}))
        elif name.endswith(".parquet"):
            for row in pq.read_table(io.BytesIO(content)).drop_columns(["images"]).to_pylist():
                row["choices"] = json.loads(row["choices"]) if row["choices"] else None
                rows.append((name, row))
    return rows


def assert_withholds(files: dict[str, bytes], private_rows: list[dict], private) -> None:
    """Nothing `private` withholds anywhere in `files`; what it does not withhold is there."""
    blob = b"\n".join(text for name, content in files.items() for text in readable(name, content))
    for row in private_rows:
        hidden = expected_hidden(private, row["split"])
        secrets = ([row["reference_answer"]] if "reference_answer" in hidden else []) + (
            list(row["criteria"]) if "criteria" in hidden else []
        )
        for secret in secrets:
            assert secret.encode() not in blob, (private, row["id"], secret)
        if "reference_answer" not in hidden:
            assert row["reference_answer"].encode() in blob, (private, row["id"])
        for criterion in row["criteria"] if "criteria" not in hidden else ():
            assert criterion.encode() in blob, (private, row["id"])
    keys = {r["id"]: r for r in private_rows}
    by_question = {(r["split"], r["question"]): r for r in private_rows}
    seen = 0
    for where, row in structured_rows(files):
        if not row.get("choices"):
            continue
        hidden = expected_hidden(private, row["split"])
        seen += 1
        if "answer" in hidden:
            assert row["answer"] is None, (private, where, row)
        else:
            source = keys.get(row.get("id")) or by_question.get((row["split"], row.get("question")))
            assert row["answer"] == (source["answer"] if source else "C"), (private, where, row)
    assert seen, "no multiple-choice row was checked"


def test_the_default_withholds_the_test_splits_keys_references_and_criteria(built):
    release = built()
    assert release.private == sorted(withholding.DEFAULT_PRIVATE)
    private_rows = services.bundle_rows(release, "private")
    assert {r["split"] for r in private_rows} == {"dev", "test"}
    public = {}
    for kind in PUBLIC_KINDS:
        public.update({f"{kind}:{n}": c for n, c in members(stored(release, kind)).items()})
    assert_withholds(public, private_rows, withholding.DEFAULT_PRIVATE)
    # The dev split is public in full: its rows in the public bundle are the private ones.
    public_rows = [json.loads(line) for line in members(stored(release, "public.zip"))["items.jsonl"].decode().splitlines()]
    assert [r for r in public_rows if r["split"] == "dev"] == [r for r in private_rows if r["split"] == "dev"]
    # The private bundle holds everything.
    private = members(stored(release, "private.tar.gz"))
    private_blob = b"".join(private.values())
    for row in private_rows:
        assert row["reference_answer"].encode() in private_blob
        assert all(c.encode() in private_blob for c in row["criteria"])
    assert [json.loads(line) for line in private["items.jsonl"].decode().splitlines()] == private_rows
    # The card says it, per split, from the same setting.
    card = public["public.zip:README.md"].decode()
    assert "- test split: withholds answer keys, reference answers and per-sample criteria" in card
    assert "- dev split: public in full" in card


def test_every_combination_of_parts_withholds_exactly_what_it_names(built, tmp_path):
    release = built()
    private_rows = services.bundle_rows(release, "private")
    names = sorted(withholding.PARTS)
    for size in range(len(names) + 1):
        for private in combinations(names, size):
            Release.objects.filter(pk=release.pk).update(private=list(private))
            release.refresh_from_db()
            folder = tmp_path / "-".join(private or ("none",))
            services.write_bundle(release, "public", folder)
            files = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
            parquet.write_dataset_zip(release, services.iter_bundle_rows(release, "public"), folder / "dataset.zip")
            with zipfile.ZipFile(folder / "dataset.zip") as archive:
                files.update({n: archive.read(n) for n in archive.namelist()})
            assert_withholds(files, private_rows, private)
            for line in withholding.statement(private):
                assert line in files["README.md"].decode()


def test_the_release_form_says_what_publishing_more_makes_public(
    client_for, researcher, benchmark, accepted, django_capture_on_commit_callbacks
):
    client = client_for(researcher)
    page = client.get(f"/b/{benchmark.slug}/releases/").content.decode()
    assert "publishes the dev split in full" in page and "anyone who downloads the public bundle can read it" in page
    for part in withholding.DEFAULT_PRIVATE:
        assert f'value="{part}" ' in page and "checked" in page.split(f'value="{part}"')[1].split(">")[0]
    assert withholding.published_beyond_default(["test_answers"]) == [
        "the test split's reference answers and per-sample criteria"
    ]
    assert withholding.published_beyond_default(withholding.DEFAULT_PRIVATE + ("criteria",)) == []
    form = {"version": "1.0.0", "statuses": ["accepted"], "dev_ratio": 0.4, "split_seed": 0, "private": ["test_answers"]}
    with django_capture_on_commit_callbacks(execute=True):
        page = client.post(f"/b/{benchmark.slug}/releases/", {**form, "license": "CC BY 4.0"}, follow=True)
    text = page.content.decode()
    said = "publishes more than the default: its public bundle carries the test split&#x27;s reference answers"
    assert said in text and 'id="published"' in text


# ---- inside the app ---------------------------------------------------------------------------------


def test_a_frozen_release_hides_what_it_withholds_from_annotators_whose_work_it_is_not(
    built, researcher, annotator, make_user, benchmark, api_for, client_for
):
    from review.models import Review, ReviewRound, RoundItem

    release = built()
    other = make_user("annotator", "abe", benchmarks=[benchmark])
    reviewer = make_user("reviewer", "rhea", benchmarks=[benchmark])
    splits = dict(release.items.values_list("item_id", "split"))
    test_ids = sorted(pk for pk, split in splits.items() if split == "test")
    # rhea was assigned to review one test item (a round before the release)
    reviewed = test_ids[0]
    review_round = ReviewRound.objects.create(benchmark=benchmark, number=1, status="closed", created_by=researcher)
    entry = RoundItem.objects.create(round=review_round, item_id=reviewed, version=1, outcome="accepted")
    Review.objects.create(round=review_round, entry=entry, item_id=reviewed, reviewer=reviewer, verdict="accept")
    before = {
        r["id"]: r for r in api_for(other).get(f"/api/v1/benchmarks/{benchmark.slug}/items/?page_size=100").json()["results"]
    }
    assert any(before[pk]["reference_answer"] for pk in test_ids)  # not frozen yet: nothing is withheld
    services.freeze(release, user=researcher)

    def items_seen_by(user) -> dict[int, dict]:
        found, url = {}, f"/api/v1/benchmarks/{benchmark.slug}/items/?status=released"
        while url:
            page = api_for(user).get(url).json()
            found.update({r["id"]: r for r in page["results"]})
            url = page["next"]
        assert len(found) == 22
        return found

    seen = items_seen_by(other)
    for pk, split in splits.items():
        row = seen[pk]
        if split == "test":
            assert row["reference_answer"] == "" and row["criteria"] == [] and row["answer"] == "", row
            assert row["withheld"] == ["answer", "criteria", "reference_answer"]
        else:
            assert "SECRET-REFERENCE" in row["reference_answer"] and row["criteria"] and row["withheld"] == []
    listing = json.dumps(seen)
    detail = api_for(other).get(f"/api/v1/benchmarks/{benchmark.slug}/items/{test_ids[1]}/").json()
    history = api_for(other).get(f"/api/v1/benchmarks/{benchmark.slug}/items/{test_ids[1]}/history/").json()
    page = client_for(other).get(f"/b/{benchmark.slug}/items/{test_ids[1]}/").content.decode()
    history_page = client_for(other).get(f"/b/{benchmark.slug}/items/{test_ids[1]}/history/").content.decode()
    for text in (json.dumps(detail), json.dumps(history), page, history_page):
        assert "SECRET-REFERENCE" not in text and "SECRET-CRITERION" not in text
    assert "SECRET-REFERENCE" not in json.dumps([seen[pk] for pk in test_ids]) and "SECRET-REFERENCE" in listing  # dev ones
    # Nor does a search answer questions about them (words of a withheld reference find nothing).
    search = f"/api/v1/benchmarks/{benchmark.slug}/items/?q=SECRET-REFERENCE-{{n}}"
    found = {n: {r["id"] for r in api_for(other).get(search.format(n=n)).json()["results"]} for n in range(10)}
    hits = set().union(*found.values())
    assert hits and not hits & set(test_ids)  # the dev ones are found, the test ones are not
    assert set(test_ids) & {r["id"] for n in range(10) for r in api_for(researcher).get(search.format(n=n)).json()["results"]}
    mcq_test = [pk for pk in test_ids if seen[pk]["kind"] == "mcq"]
    assert mcq_test and all(seen[pk]["answer"] == "" for pk in mcq_test)
    mcq_page = client_for(other).get(f"/b/{benchmark.slug}/items/{mcq_test[0]}/").content.decode()
    assert 'value="C" checked' not in mcq_page and 'id="withheld-notice"' in mcq_page
    # Their author, the reviewer assigned to one, and researchers read them in full.
    for user in (annotator, researcher):
        assert all("SECRET-REFERENCE" in items_seen_by(user)[pk]["reference_answer"] for pk in test_ids)
    assert "SECRET-REFERENCE" in items_seen_by(reviewer)[reviewed]["reference_answer"]
    full = items_seen_by(researcher)
    elsewhere = next(pk for pk in test_ids if full[pk]["reference_answer"] != full[reviewed]["reference_answer"])
    assert items_seen_by(reviewer)[elsewhere]["reference_answer"] == ""  # another group: not theirs
    author_page = client_for(annotator).get(f"/b/{benchmark.slug}/items/{test_ids[1]}/").content.decode()
    assert "SECRET-REFERENCE" in author_page or "SECRET-CRITERION" in author_page


# ---- the bundled harness with a public bundle ----------------------------------------------------


def test_following_the_readme_in_a_public_bundle_scores_dev_says_what_it_skipped_and_verifies(built, tmp_path, fake_llm):
    import os
    import subprocess
    import sys
    import tarfile

    release = built()
    with tarfile.open(stored(release, "public.tar.gz")) as archive:
        archive.extractall(tmp_path, filter="data")
    root = tmp_path / release.top
    (root / "models.toml").write_text(  # where the README puts it: in the release folder
        f'[models.vlm]\nprovider = "openai"\nbase_url = "{fake_llm.base_url("openai")}"\nmodel = "vlm"\n'
        f'api_key_env = "FAKE_KEY"\nvision = true\n\n'
        f'[models.judge]\nprovider = "openai"\nbase_url = "{fake_llm.base_url("openai")}"\nmodel = "judge"\napi_key_env = "FAKE_KEY"\n'
    )
    fake_llm.script("vlm", "There are three apples.")
    fake_llm.script("judge", '{"rating": 8, "reason": "correct"}')
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE", "BENCHFORGE_MODELS")}
    env.update(FAKE_KEY="test-key")

    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "benchforge_harness", *args], cwd=root, env=env, capture_output=True, text=True, timeout=300
        )

    assert run("infer", "--model", "vlm", "--workers", "1").returncode == 0  # predictions/, .harness-cache/
    judged = run("judge", "--judge", "judge", "--predictions", "predictions/vlm.jsonl", "--workers", "1")
    assert judged.returncode == 0, judged.stderr
    counts = release.counts["tasks"]["计数"]
    assert (
        f"judge: {counts['test']} open question(s) cannot be scored: this public bundle withholds their reference answers (test split)"
        in judged.stderr
    )
    results = json.loads((root / "results/judge/results.json").read_text())
    assert results["models"]["vlm"]["judged"] == counts["dev"]
    card = (root / "README.md").read_text()
    assert "`judge` scores the dev split and `mcq` scores the dev split" in card
    verified = run("verify", ".")
    assert verified.returncode == 0, verified.stderr  # the README's working files are not additions
    (root / "benchforge_harness" / "evil.py").write_text("print('smuggled')")
    assert "benchforge_harness/evil.py: not listed in the manifest" in run("verify", ".").stderr

    # A bundle that withholds every split's references has nothing to judge: it says so and fails.
    Release.objects.filter(pk=release.pk).update(private=["reference_answers"])
    release.refresh_from_db()
    bare = tmp_path / "bare"
    services.write_bundle(release, "public", bare)
    (bare / "p.jsonl").write_text((root / "predictions/vlm.jsonl").read_text())
    env["BENCHFORGE_MODELS"] = str(root / "models.toml")
    nothing = subprocess.run(
        [sys.executable, "-m", "benchforge_harness", "judge", "--judge", "judge", "--predictions", "p.jsonl"],
        cwd=bare,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (
        nothing.returncode == 2
        and "nothing was scored" in nothing.stderr
        and "18 open question(s) cannot be scored" in nothing.stderr
    )
