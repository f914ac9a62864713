"""Items from external benchmarks, and the AlignMMBench import job."""

from django.db import transaction
from django.utils import timezone

from benchforge import permissions
from benchforge.bulk import bulk_insert, insert_rows, unsaved
from benchforge.errors import NotAllowed
from benchforge.roles import RESEARCHER, user_role
from curation.models import Benchmark

from ..contract import SCALAR_FIELDS
from ..models import Criterion, Item, ItemImage, ItemRevision
from ..workflow import ACCEPTED
from .items import item_snapshot_defaults, merged_state
from .validation import load_image_rows, shape_problems


def import_external_items(benchmark: Benchmark, specs: list[dict], *, user) -> tuple[list[Item], dict[int, list[str]]]:
    """Bulk-create items of an external benchmark: status accepted (reviewed by their publisher),
    version 1 with one 'imported' history row each. A spec is {"task": Task, "seed": Item or None,
    "external_id": str, **editable fields}. Specs that break a shape rule are left out; their
    problems come back keyed by the spec's index. Callers skip external ids already imported."""
    if user_role(user) != RESEARCHER:
        raise NotAllowed("Importing a benchmark needs the researcher role.")
    items, states, problems = [], [], {}
    new_item = unsaved(Item)
    # Every spec's images in one query (a spec's images are ids; a malformed list is the shape check's to refuse).
    image_rows = load_image_rows(
        {i for spec in specs if isinstance(spec.get("images"), list) for i in spec["images"] if isinstance(i, int)}
    )
    for n, spec in enumerate(specs):
        spec = dict(spec)
        item = new_item(
            benchmark=benchmark,
            task=spec.pop("task"),
            seed=spec.pop("seed", None),
            is_external=True,
            external_id=spec.pop("external_id"),
            status=ACCEPTED,
        )
        state = merged_state(item, {**item_snapshot_defaults(), "task": item.task_id}, spec)
        found = shape_problems(item, state, image_rows=image_rows)
        if found:
            problems[n] = found
            continue
        for name in SCALAR_FIELDS:
            setattr(item, name, state[name])
        items.append(item)
        states.append({**state, "status": ACCEPTED})
    with transaction.atomic():
        bulk_insert(items, ids=True)
        # The rows below as plain values: making an instance of each cost more than its insert.
        insert_rows(
            ItemImage,
            ("item_id", "image_id", "order"),
            [(item.pk, image_id, n) for item, state in zip(items, states) for n, image_id in enumerate(state["images"])],
        )
        insert_rows(
            Criterion,
            ("item_id", "order", "kind", "text"),
            [
                (item.pk, n, c["kind"], c["text"])
                for item, state in zip(items, states)
                for n, c in enumerate(state["criteria"], 1)
            ],
        )
        changed_by, now = getattr(user, "pk", None), timezone.now()  # one time for the items stored together
        insert_rows(
            ItemRevision,
            ("item_id", "version", "snapshot", "action", "changed_by_id", "changed_at"),
            [(item.pk, 1, state, ItemRevision.Action.IMPORTED, changed_by, now) for item, state in zip(items, states)],
        )
    return items, problems


ALIGNMMBENCH_JOB = "import_alignmmbench"


def import_alignmmbench(benchmark: Benchmark, path, user):
    """Import an AlignMMBench metadata.jsonl from a server path as a job, now (management command);
    returns the finished job. Re-running adds nothing already imported (matched by question_id)."""
    from jobs import services as jobs

    return jobs.run_now(jobs.create_job(ALIGNMMBENCH_JOB, user=user, benchmark=benchmark, params={"path": str(path)}))


def start_alignmmbench_import(benchmark: Benchmark, *, user, file, created_benchmark: bool = False):
    """Stage an uploaded metadata.jsonl and import it in the background (`created_benchmark`: the
    benchmark was made for this import, and goes again if the file is refused)."""
    from jobs import services as jobs
    from jobs.staging import stage_upload

    permissions.require_researcher(user, "Importing a benchmark")
    staged = stage_upload(file, ".jsonl")
    return jobs.start_job(
        ALIGNMMBENCH_JOB,
        user=user,
        benchmark=benchmark,
        params={"staged": staged, "filename": getattr(file, "name", "metadata.jsonl"), "created_benchmark": created_benchmark},
    )
