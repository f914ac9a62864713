"""A finished QC run for the development demo. Development only. With the built-in demo endpoints
in the models file (llm.demo), a real text-only run over six multiple-choice items, started and
run as a user's would be; three of the questions give their answer away in their own words, which
is what the filter is there to catch. Without them, a run with canned answers (no LLM call)."""

from django.db import transaction

from annotation.models import Item
from annotation.services import change_status_many, import_external_items
from annotation.workflow import QC_FLAGGED
from benchforge import permissions
from benchforge_harness.scoring import circular_passes
from jobs import services as jobs
from llm import demo as llm_demo

from .models import QCAnswer, QCItem, QCRun
from .services.imports import _Taxonomy
from .services.runs import FLAG_ACTION, start_run

MODELS = ["demo-llm-a", "demo-llm-b", "demo-llm-c"]
# question, options, key, which demo models "know" it without the image
QUESTIONS = [
    ("What is the capital of France, shown on this map?", ["Berlin", "Paris", "Rome", "Madrid"], "B", {0, 1, 2}),
    ("How many legs does the insect in the photo have?", ["Four", "Six", "Eight", "Ten"], "B", {0, 1}),
    ("Which colour is the car on the left?", ["Red", "Blue", "Green", "White"], "C", set()),
    ("What does the sign above the door say?", ["Exit", "Open", "Closed", "Push"], "A", {2}),
    ("Which planet is the largest in the solar system, as in the chart?", ["Mars", "Venus", "Jupiter", "Earth"], "C", {0, 2}),
    ("What time does the clock show?", ["3:15", "9:45", "12:00", "6:30"], "D", set()),
]


# Questions a model can answer without the image (the answer is in the question), and others.
GIVEAWAY_QUESTIONS = [
    ("The red double-decker bus in the photo: what colour is it?", ["Blue", "Red", "Green", "Yellow"], "B"),
    ("Which fruit is piled on the plate of sliced bananas?", ["Apples", "Bananas", "Grapes", "Pears"], "B"),
    ("How many wheels does the three-wheeled cart have?", ["Two", "Three", "Four", "Six"], "B"),
    ("Which colour is the car on the left?", ["Red", "Blue", "Green", "White"], "C"),
    ("What time does the clock show?", ["3:15", "9:45", "12:00", "6:30"], "D"),
    ("What does the sign above the door say?", ["Exit", "Open", "Closed", "Push"], "A"),
]


def _run_demo(benchmark, researcher) -> str:
    task = benchmark.tasks.order_by("pk").first() or _Taxonomy(benchmark).task("QC demo", "Text-only check")
    wanted = {f"qc-demo-{n}": q for n, q in enumerate(GIVEAWAY_QUESTIONS)}
    with transaction.atomic():
        have = set(Item.objects.filter(benchmark=benchmark, external_id__in=list(wanted)).values_list("external_id", flat=True))
        specs = [
            {"task": task, "external_id": key, "kind": "mcq", "question_type": "closed", "question": q, "choices": o, "answer": a}
            for key, (q, o, a) in wanted.items()
            if key not in have
        ]
        import_external_items(benchmark, specs, user=researcher)
    ids = list(Item.objects.filter(benchmark=benchmark, external_id__in=list(wanted)).values_list("pk", flat=True))
    run = start_run(benchmark, user=researcher, filter=QCRun.Filter.TEXT_ONLY, models=llm_demo.ANSWERING, item_ids=ids)
    for job in run.jobs.all():
        jobs.see_through(job)
    run.refresh_from_db()
    flagged = run.entries.filter(flagged=True).count()
    return f"QC: run {run.number} on the demo endpoints ({run.get_status_display().lower()}), {flagged} of {len(ids)} items flagged for a decision."


def add_demo(benchmark, users: dict) -> str:
    """users: the demo users by username, as every demo step takes them. Add (once) six multiple-choice items and a finished text-only run over them, three flagged."""
    if (
        QCRun.objects.filter(benchmark=benchmark, scope__demo=True).exists()
        or QCRun.objects.filter(benchmark=benchmark, model_names=llm_demo.ANSWERING).exists()
    ):
        return "QC demo run already there."
    researcher = next((u for u in users.values() if permissions.is_researcher(u)), None)
    if researcher is None:
        return "QC demo skipped: no researcher among the demo users."
    if llm_demo.demo_endpoints_ready():
        return _run_demo(benchmark, researcher)
    task = benchmark.tasks.order_by("pk").first() or _Taxonomy(benchmark).task("QC demo", "Text-only check")
    with transaction.atomic():
        wanted = {f"qc-demo-{n}": q for n, q in enumerate(QUESTIONS)}
        have = set(Item.objects.filter(benchmark=benchmark, external_id__in=list(wanted)).values_list("external_id", flat=True))
        specs = [
            {"task": task, "external_id": key, "kind": "mcq", "question_type": "closed", "question": q, "choices": o, "answer": a}
            for key, (q, o, a, _k) in wanted.items()
            if key not in have
        ]
        import_external_items(benchmark, specs, user=researcher)
        items = {i.external_id: i for i in Item.objects.filter(benchmark=benchmark, external_id__in=list(wanted))}
        number = (QCRun.objects.filter(benchmark=benchmark).order_by("-number").values_list("number", flat=True).first() or 0) + 1
        run = QCRun.objects.create(
            benchmark=benchmark,
            number=number,
            filter=QCRun.Filter.TEXT_ONLY,
            model_names=MODELS,
            threshold=0.5,
            scope={"demo": True, "tasks": [], "items": None},
            estimate={"items": len(QUESTIONS), "calls_without_stopping": len(QUESTIONS) * 4 * len(MODELS)},
            status=QCRun.Status.FINISHED,
            created_by=researcher,
        )
        flagged, answers, entries = [], [], []
        for key, (_q, options, answer, known) in wanted.items():
            item = items[key]
            passes = circular_passes(dict(zip("ABCD", options)), answer)
            verdict = {"solved_by": [], "failed_by": [], "not_asked": []}
            for n, model in enumerate(MODELS):
                solved = len(verdict["solved_by"])
                still_open = len(MODELS) - n
                if solved > 1.5 or solved + still_open <= 1.5:  # settled: the rest are not asked
                    verdict["not_asked"].append(model)
                    continue
                for shown in passes:
                    right = n in known
                    letter = shown.answer if right else next(letter for letter in shown.options if letter != shown.answer)
                    answers.append(
                        QCAnswer(
                            run=run,
                            item=item,
                            model=model,
                            shift=shown.index,
                            options=shown.options,
                            shown_answer=shown.answer,
                            output=f"The answer is {letter}.",
                            letter=letter,
                            method="heuristic",
                            correct=right,
                        )
                    )
                    if not right:
                        break
                verdict["solved_by" if n in known else "failed_by"].append(model)
            is_flagged = len(verdict["solved_by"]) > 1.5
            entries.append(QCItem(run=run, item=item, done=True, flagged=is_flagged, **verdict))
            if is_flagged:
                flagged.append(item)
        QCItem.objects.bulk_create(entries)
        QCAnswer.objects.bulk_create(answers)
        change_status_many(flagged, QC_FLAGGED, user=researcher, action=FLAG_ACTION, note=f"QC run {number}: text-only (demo)")
    return f"QC demo run {number}: {len(QUESTIONS)} items, {len(flagged)} flagged, {len(answers)} canned answers."
