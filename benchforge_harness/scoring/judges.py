"""LLM judges as library functions: pointwise grades, pairwise votes, TouchStone, hallucination.

Each is a scoring mode's run (modes.py): run(client, items, *, sink, judge, answers, ...) with
the items (Items or dicts), the judge's endpoint name, the answers to judge as {model name:
{item id: answer text}}, and a sink for the sample rows (resumable: rows the sink already
finished are not asked again). Each returns Scores: `results` (the numbers, as the CLI writes
them to results.json), `rows` (every sample row by key) and `stats` (this run's counts and the
judge endpoint's usage). benchforge_harness/README.md (section 3) states the rules they encode.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from benchforge_harness import llm
from benchforge_harness.calls import ERROR, OK, UNPARSED, Call, RunStats, Sink, send_calls
from benchforge_harness.io import InputError
from benchforge_harness.metrics import (
    FAILED,
    WIN,
    EloSettings,
    alignment_score,
    bootstrap_elo,
    bradley_terry,
    elo_ratings,
    spearman,
    why_no_correlation,
    win_tie_lose,
)
from benchforge_harness.parsing import parse_rating, parse_score_pair, parse_vote
from benchforge_harness.prompts import Prompts, Template
from benchforge_harness.release import Item
from benchforge_harness.scoring.inputs import ImageLoader, as_answers, as_items, attach_images, item_images, render_history
from benchforge_harness.scoring.modes import Scores, open_question
from benchforge_harness.votes import ORDERS, battle_score, combine_votes, outcome_result, vote_side

ELO = EloSettings()  # the ratings' settings unless a caller gives others
POINTWISE_FIELDS = ("task", "task_rule", "history", "question_type", "question", "reference", "answer")


# Which items each judge scores (the registry's Mode.scores says the same to callers that estimate).
def with_reference(item: Item) -> bool:
    return open_question(item) and bool(item.reference_answer)


def described(item: Item) -> bool:
    return open_question(item) and bool(item.description)


def described_with_reference(item: Item) -> bool:
    return described(item) and bool(item.reference_answer)


def _endpoint(client, name: str) -> llm.Endpoint:
    if name not in client.endpoints:
        declared = ", ".join(sorted(client.endpoints)) or "none"
        raise llm.ConfigError(f"no endpoint named {name!r} in the models file (declared: {declared})")
    return client.endpoints[name]


def ask_judge(
    client,
    judge: str,
    template: str,
    prompts: Prompts,
    items: list[Item],
    answers: Mapping[str, Mapping[str, str]],
    render: Callable[[Template, Item, str, Any], str | None],
    parse: Callable[[str], dict],
    *,
    sink: Sink,
    variants: Sequence = (None,),
    variant_field: str = "",
    meta: Callable[[Item], dict] = lambda item: {"category": item.category, "task": item.task},
    images: Callable[[Item], list] | None = None,
    label: str = "",
    parse_retries: int = 2,
    workers=1,
    reopen=None,
    progress_stream=None,
) -> RunStats:
    """Ask the judge about each model's answer to each item (once per variant: an answer order or
    position, named variant_field in the row), its prompt `template` rendered by render(template, item, answer, variant) (None:
    not asked), an unreadable reply re-asked with "retry_" + template. Rows are keyed
    "model\titem id" (plus "\tvariant")."""
    # each item is judged in its own language: every template found before any call is made
    template_, retry = _templates(prompts, template, items)
    calls = []
    for model, by_id in answers.items():
        for item in items:
            if item.id not in by_id:
                continue
            for variant in variants:
                prompt = render(template_[item.language], item, by_id[item.id], variant)
                if prompt is None:
                    continue
                calls.append(
                    Call(
                        key=f"{model}\t{item.id}" + ("" if variant is None else f"\t{variant}"),
                        build=lambda prompt=prompt, item=item: [llm.user_message(prompt, images=images(item) if images else [])],
                        meta={
                            "model": model,
                            "id": item.id,
                            **({} if variant is None else {variant_field: variant}),
                            **meta(item),
                        },
                        parse=parse,
                        retry=lambda problem, item=item: retry[item.language].render(problem=problem),
                    )
                )
    return send_calls(
        client,
        judge,
        calls,
        sink,
        label=label or template,
        parse_retries=parse_retries,
        with_images=images is not None,
        workers=workers,
        reopen=reopen,
        progress_stream=progress_stream,
    )


def group_mean(rows, key: str, value: str) -> dict:
    """{group: {"mean", "n"}} over rows, in first-seen order."""
    buckets: dict = {}
    for row in rows:
        buckets.setdefault(row.get(key) or "(none)", []).append(row[value])
    return {k: {"mean": sum(v) / len(v), "n": len(v)} for k, v in buckets.items()}


def task_rule(task: str | None, prompts: Prompts, rules: Mapping[str, str] | None = None, language: str | None = None) -> str:
    """The judge's rule for a task: the release's own (rules) first, then the built-in one in `language`."""
    return (rules or {}).get(task or "") or prompts.task_rule(task, language)


def _templates(prompts: Prompts, name: str, items: Iterable[Item]) -> tuple[dict, dict]:
    """({item language: template}, {item language: its retry template}) for the languages of
    `items`, all found before any call is made."""
    languages = {item.language for item in items} or {None}
    return (
        {language: prompts.get(name, language) for language in languages},
        {language: prompts.get(f"retry_{name}", language) for language in languages},
    )


# --------------------------------------------------------------------------- pointwise


def pointwise_judge(
    client,
    items: Iterable[Item | Mapping[str, Any]],
    *,
    sink: Sink,
    judge: str,
    answers: Mapping[str, Mapping],
    prompts: Prompts | None = None,
    rules: Mapping[str, str] | None = None,
    parse_retries: int = 2,
    **run,
) -> Scores:
    """1-10 grades against the reference answer (the judge does not see the image), mean per task,
    category and overall, and the alignment score over seed groups. rules: task -> judging rule
    text that replaces the built-in rule of that task. Items without a reference are skipped
    and counted."""
    prompts = prompts or Prompts()
    _endpoint(client, judge)
    all_items = as_items(items)
    scored = [item for item in all_items if with_reference(item)]
    for each in _templates(prompts, "pointwise", scored)[0].values():
        each.check(POINTWISE_FIELDS)
    answers = as_answers(answers)

    def render(template, item, answer, _):
        return template.render(
            task=item.task or "",
            task_rule=task_rule(item.task, prompts, rules, item.language),
            history=render_history(item.history),
            question_type=item.question_type or "",
            question=item.question,
            reference=item.reference_answer,
            answer=answer,
        )

    def parse(text: str) -> dict:
        rating = parse_rating(text)
        return {"rating": rating.value, "reason": rating.reason}

    stats = ask_judge(
        client,
        judge,
        "pointwise",
        prompts,
        scored,
        answers,
        render,
        parse,
        sink=sink,
        meta=lambda item: {"task": item.task, "category": item.category, "group": item.group},
        label="judge",
        parse_retries=parse_retries,
        **run,
    )
    results = {
        "command": "judge",
        "items": len(scored),
        "models": {model: _pointwise_model(stats.rows, model, by_id, scored) for model, by_id in answers.items()},
        "skipped_without_reference": sum(1 for i in all_items if not i.is_mcq and not i.reference_answer),
    }
    return Scores("pointwise", results, stats.rows, {judge: stats})


def _pointwise_model(rows: Mapping[str, dict], model: str, by_id: Mapping, scored: list[Item]) -> dict:
    """One model's grades: counts, mean, by task and category, and the alignment score."""
    ok_rows, unparsed, errors = [], [], []
    for item in scored:
        row = rows.get(f"{model}\t{item.id}")
        if row is None:
            continue
        if row["status"] == OK:
            ok_rows.append(row)
        elif row["status"] == UNPARSED:
            unparsed.append(item.id)
        else:
            errors.append(item.id)
    groups: dict[str, list] = {}
    for row in ok_rows:
        groups.setdefault(row["group"], []).append(row["rating"])
    alignment = alignment_score(groups)
    ratings = [row["rating"] for row in ok_rows]
    return {
        "judged": len(ok_rows),
        "unparsed": len(unparsed),
        "unparsed_ids": unparsed,
        "errors": len(errors),
        "error_ids": errors,
        "no_answer": sum(1 for item in scored if item.id not in by_id),
        "mean": sum(ratings) / len(ratings) if ratings else None,
        "by_task": group_mean(ok_rows, "task", "rating"),
        "by_category": group_mean(ok_rows, "category", "rating"),
        "alignment": {
            "score": alignment.score,
            "groups": alignment.groups,
            "skipped_single": alignment.skipped_small,
            "sigma_sum": alignment.sigma_sum,
        },
    }


def pointwise_item_results(rows: Mapping[str, dict], items: Iterable[Item | Mapping[str, Any]], model: str) -> dict:
    """{item id: (rating / 10, "7/10")} of the items the judge graded for `model` (the headline is
    the mean rating, out of 10)."""
    found = {}
    for item in as_items(items):
        row = rows.get(f"{model}\t{item.id}")
        if with_reference(item) and row and row.get("status") == OK:
            found[item.id] = (row["rating"] / 10, f"{row['rating']}/10")
    return found


def pointwise_verdicts(rows: Mapping[str, dict], model: str) -> dict[str, dict]:
    """{item id: {"rating"}}: the judge's grade of each of `model`'s answers it read, from the
    rows its run wrote (keyed "model<TAB>item id")."""
    prefix = f"{model}\t"
    return {
        key[len(prefix) :]: {"rating": row["rating"]}
        for key, row in rows.items()
        if key.startswith(prefix) and "\t" not in key[len(prefix) :] and row.get("status") == OK
    }


# --------------------------------------------------------------------------- pairwise


def render_pairwise_prompt(template: Template, item: Item, answer1: str, answer2: str, has_image: bool) -> str:
    return template.render(
        has_image="yes" if has_image else "",
        question_type=item.question_type or "",
        question=item.question,
        criteria="\n".join(f"- {c}" for c in item.criteria),
        answer1=answer1,
        answer2=answer2,
    )


def question_outcome(rows: Mapping[str, dict], model: str, item_id: str) -> tuple[str, str | None]:
    """(combined outcome, or FAILED with why) for one model and question from its two order rows."""
    votes = []
    for order in ORDERS:
        row = rows.get(f"{model}\t{item_id}\t{order}")
        if row is None:
            return FAILED, "not judged"
        if row["status"] != OK:
            return FAILED, "unreadable vote" if row["status"] == UNPARSED else "judge call failed"
        votes.append(row["vote"])
    return combine_votes(*votes), None


def pairwise_judge(
    client,
    items: Iterable[Item | Mapping[str, Any]],
    *,
    sink: Sink,
    judge: str,
    answers: Mapping[str, Mapping],
    anchor: str,
    anchor_answers: Mapping,
    text_only: bool = False,
    image_loader: ImageLoader | None = None,
    prompts: Prompts | None = None,
    parse_retries: int = 2,
    bootstrap: int = 1000,
    seed: int = 0,
    elo: EloSettings = ELO,
    **run,
) -> Scores:
    """MLLM-Bench votes of each model against an anchor model, every question judged in both
    answer orders (order 1: anchor first) with the item's criteria and, unless text_only, its
    images; the two votes combined (votes.combine_votes). Win/tie/lose per category and overall,
    win rate, Elo (bootstrap median) and Bradley-Terry."""
    prompts = prompts or Prompts()
    answers = as_answers(answers)
    anchor_model, anchor = anchor, as_answers({anchor: anchor_answers})[anchor]
    if anchor_model in answers:
        raise InputError(f"the anchor {anchor_model!r} is also among the models compared with it")
    scored = [item for item in as_items(items) if open_question(item)]
    attach = attach_images(_endpoint(client, judge), scored, text_only, "judge", image_loader)

    def render(template, item, answer, order):
        if item.id not in anchor:
            return None
        first, second = (anchor[item.id], answer) if order == 1 else (answer, anchor[item.id])
        return render_pairwise_prompt(template, item, first, second, attach)

    stats = ask_judge(
        client,
        judge,
        "pairwise",
        prompts,
        scored,
        answers,
        render,
        lambda text: {"vote": parse_vote(text)},
        sink=sink,
        variants=ORDERS,
        variant_field="order",
        images=(lambda item: item_images(item, image_loader)) if attach else None,
        parse_retries=parse_retries,
        **run,
    )
    results = {"command": "pairwise", "anchor": anchor_model, "items": len(scored), "images": attach, "models": {}}
    battles = []
    for model, by_id in answers.items():
        results["models"][model], won = _pairwise_model(stats.rows, model, by_id, anchor, scored)
        battles += [(model, anchor_model, score) for score in won]
    if battles:
        results["elo"] = _ratings(battles, results["models"], elo, bootstrap, seed)
    else:
        results["elo_undefined"] = "no question was decided (every one failed): there is no battle to rate"
    return Scores("pairwise", results, stats.rows, {judge: stats})


def _pairwise_model(
    rows: Mapping[str, dict], model: str, by_id: Mapping, anchor: Mapping, scored: list[Item]
) -> tuple[dict, list[float]]:
    """One model against the anchor: its results, and the battle score of each decided question."""
    per_level, failures, outcomes, won = [], {}, {}, []
    consistent = both_read = 0
    for item in scored:
        if item.id not in by_id:
            outcome, why = FAILED, "no answer from the model"
        elif item.id not in anchor:
            outcome, why = FAILED, "no answer from the anchor"
        else:
            outcome, why = question_outcome(rows, model, item.id)
        per_level.append((item.category or "(none)", FAILED if outcome == FAILED else outcome_result(outcome)))
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if outcome == FAILED:
            failures[item.id] = why
            continue
        won.append(battle_score(outcome))
        sides = [vote_side(rows[f"{model}\t{item.id}\t{o}"]["vote"], o) for o in ORDERS]
        both_read += 1
        consistent += sides[0] == sides[1]
    overall = win_tie_lose(("overall", r) for _, r in per_level)["overall"]
    return {
        **overall,
        "by_category": win_tie_lose(per_level),
        "outcomes": outcomes,
        "same_vote_both_orders": consistent / both_read if both_read else None,
        "failed_ids": failures,
    }, won


def _ratings(battles: list, models: Mapping[str, dict], elo: EloSettings, bootstrap: int, seed: int) -> dict:
    """Elo (online and bootstrap median), Bradley-Terry, and how the Elo order agrees with win rates."""
    ratings = {
        "settings": {**asdict(elo), "bootstrap_rounds": bootstrap, "seed": seed},
        "online": elo_ratings(battles, elo),
        "bootstrap": bootstrap_elo(battles, rounds=bootstrap, seed=seed, settings=elo),
        "bradley_terry": bradley_terry(battles, elo),
    }
    rho, why = rank_agreement(models, ratings["bootstrap"])
    ratings["spearman_win_rate_vs_elo"] = rho
    if why:
        ratings["spearman_undefined"] = why
    return ratings


def pairwise_item_results(rows: Mapping[str, dict], items: Iterable[Item | Mapping[str, Any]], model: str) -> dict:
    """{item id: (1 for a win, else 0; "win" | "tie" | "lose")} of the questions whose two votes were
    read: the headline, the win rate, counts wins only (a tie is not one). A question the judge
    could not settle is left out."""
    found = {}
    for item in as_items(items):
        if not open_question(item):
            continue
        outcome, _why = question_outcome(rows, model, item.id)
        if outcome != FAILED:
            result = outcome_result(outcome)
            found[item.id] = (1.0 if result == WIN else 0.0, result)
    return found


def pairwise_verdicts(rows: Mapping[str, dict], model: str) -> dict[str, dict]:
    """{item id: {"outcome", "votes": [order 1's, order 2's]}} of the questions whose votes in both
    orders the judge gave for `model`, from the rows its run wrote (keyed "model<TAB>item id<TAB>order"),
    combined as the headline combines them (votes.combine_votes)."""
    prefix = f"{model}\t"
    votes: dict[str, dict[str, str]] = {}
    for key, row in rows.items():
        parts = key[len(prefix) :].split("\t") if key.startswith(prefix) else ()
        if len(parts) == 2 and row.get("status") == OK:
            votes.setdefault(parts[0], {})[parts[1]] = row["vote"]
    found = {}
    for item_id, by_order in votes.items():
        if all(str(order) in by_order for order in ORDERS):
            given = [by_order[str(order)] for order in ORDERS]
            found[item_id] = {"outcome": combine_votes(*given), "votes": given}
    return found


def rank_agreement(models: Mapping[str, dict], bootstrap: Mapping[str, dict]) -> tuple[float | None, str | None]:
    """(Spearman rho of the models' win rates and Elo medians, None) or (None, why it is undefined):
    fewer than two models, a model without an Elo rating, or every model tied on one side."""
    names = list(models)
    if len(names) < 2:
        return None, f"only {len(names)} model: a rank correlation needs at least two models"
    unrated = [n for n in names if n not in bootstrap]
    if unrated:
        return None, f"{', '.join(unrated)} decided no question, so has no Elo rating to rank"
    win_rates = [models[n]["win_rate"] for n in names]
    elo = [bootstrap[n]["median"] for n in names]
    why = why_no_correlation(win_rates, elo, "model's win rate", "model's Elo rating", pairs="model")
    return (None, why) if why else (spearman(win_rates, elo), None)


# --------------------------------------------------------------------------- TouchStone


def touchstone_scores(rows: Mapping[str, dict], model: str, item_id: str) -> tuple[float, float] | str:
    """(model score, reference score), each the mean over both positions; or why there is none."""
    model_scores, reference_scores = [], []
    for position in (1, 2):
        row = rows.get(f"{model}\t{item_id}\t{position}")
        if row is None or row["status"] == ERROR:
            return ERROR
        if row["status"] == UNPARSED:
            return UNPARSED
        s1, s2 = row["scores"]
        model_score, reference_score = (s1, s2) if position == 1 else (s2, s1)
        model_scores.append(model_score)
        reference_scores.append(reference_score)
    return sum(model_scores) / 2, sum(reference_scores) / 2


def touchstone_judge(
    client,
    items: Iterable[Item | Mapping[str, Any]],
    *,
    sink: Sink,
    judge: str,
    answers: Mapping[str, Mapping],
    prompts: Prompts | None = None,
    parse_retries: int = 2,
    **run,
) -> Scores:
    """The judge reads the image description instead of the image and scores the model's answer
    and the reference answer 1-10, twice with positions swapped; a question's score is the mean
    of both. Needs items with a description and a reference answer."""
    _endpoint(client, judge)
    answers = as_answers(answers)
    scored = [item for item in as_items(items) if described_with_reference(item)]

    def render(template, item, answer, position):  # position: where the model's answer is shown
        first, second = (answer, item.reference_answer) if position == 1 else (item.reference_answer, answer)
        return template.render(description=item.description, question=item.question, answer1=first, answer2=second)

    stats = ask_judge(
        client,
        judge,
        "touchstone",
        prompts or Prompts(),
        scored,
        answers,
        render,
        lambda text: {"scores": list(parse_score_pair(text))},
        sink=sink,
        variants=(1, 2),
        variant_field="position",
        parse_retries=parse_retries,
        **run,
    )
    results = {"command": "touchstone", "items": len(scored), "models": {}}
    for model, by_id in answers.items():
        rows, counts = [], {UNPARSED: 0, ERROR: 0, "no_answer": 0}
        for item in scored:
            if item.id not in by_id:
                counts["no_answer"] += 1
                continue
            outcome = touchstone_scores(stats.rows, model, item.id)
            if isinstance(outcome, str):
                counts[outcome] += 1
                continue
            rows.append({"category": item.category, "task": item.task, "model": outcome[0], "reference": outcome[1]})
        mean = sum(r["model"] for r in rows) / len(rows) if rows else None
        results["models"][model] = {
            "scored": len(rows),
            "unparsed": counts[UNPARSED],
            "errors": counts[ERROR],
            "no_answer": counts["no_answer"],
            "score": mean,
            "score_x100": mean * 100 if mean is not None else None,
            "reference_score": sum(r["reference"] for r in rows) / len(rows) if rows else None,
            "by_category": group_mean(rows, "category", "model"),
            "by_task": group_mean(rows, "task", "model"),
        }
    return Scores("touchstone", results, stats.rows, {judge: stats})


# --------------------------------------------------------------------------- hallucination


def hallucination_judge(
    client,
    items: Iterable[Item | Mapping[str, Any]],
    *,
    sink: Sink,
    judge: str,
    answers: Mapping[str, Mapping],
    prompts: Prompts | None = None,
    parse_retries: int = 2,
    **run,
) -> Scores:
    """0-10: how much of an answer's content about the image the human description does not
    support (lower is better). Needs items with a description."""
    _endpoint(client, judge)
    answers = as_answers(answers)
    scored = [item for item in as_items(items) if described(item)]

    def parse(text: str) -> dict:
        rating = parse_rating(text, low=0, high=10, keys=("score", "hallucination", "rating"))
        return {"score": rating.value, "reason": rating.reason}

    stats = ask_judge(
        client,
        judge,
        "hallucination",
        prompts or Prompts(),
        scored,
        answers,
        lambda template, item, answer, _: template.render(description=item.description, question=item.question, answer=answer),
        parse,
        sink=sink,
        parse_retries=parse_retries,
        **run,
    )
    results = {"command": "hallucination", "items": len(scored), "models": {}}
    for model, by_id in answers.items():
        rows = [stats.rows.get(f"{model}\t{item.id}") for item in scored if item.id in by_id]
        ok_rows = [row for row in rows if row and row["status"] == OK]
        results["models"][model] = {
            "scored": len(ok_rows),
            "unparsed": sum(1 for row in rows if row and row["status"] == UNPARSED),
            "errors": sum(1 for row in rows if not row or row["status"] == ERROR),
            "no_answer": sum(1 for item in scored if item.id not in by_id),
            "mean": sum(r["score"] for r in ok_rows) / len(ok_rows) if ok_rows else None,
            "by_category": group_mean(ok_rows, "category", "score"),
        }
    return Scores("hallucination", results, stats.rows, {judge: stats})
