"""What a run would ask before it runs: calls, prompt and completion tokens and cost, per endpoint.

The one estimate the platform shows before it spends (QC runs, leaderboard scores, rewrite and LLM
batches). What a scoring mode asks comes from the registry (modes.py), never from a copy of it:
  * per item: `scores` (which items it scores) and, for a mode that judges answers given to it
    (`takes("answers")`), one answer from the model under test to each open question not answered yet;
  * per pass: `passes(item)` calls to the model under test (CircularEval: one per option, each
    showing every option), each expecting `pass_tokens` of reply;
  * per judge call: `judge_calls` calls to the judge, each reading the question, the reference
    and the answer, with JUDGE_PROMPT_OVERHEAD tokens of instructions around them.
Tokens follow the harness's rough rule (benchforge_harness/llm/cost.py); prices are the endpoints'
(None: an endpoint declares none, and so is any total it is part of). Every call is counted as
paid: a stop, a cache hit or a resume only ever asks fewer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from benchforge_harness.llm.cost import DEFAULT_COMPLETION_TOKENS, IMAGE_TOKENS, cost, estimate_prompt_tokens
from benchforge_harness.llm.endpoints import Endpoint
from benchforge_harness.llm.messages import text_message
from benchforge_harness.mcq import format_options
from benchforge_harness.prompts import Prompts
from benchforge_harness.scoring.inputs import as_items
from benchforge_harness.scoring.modes import Mode

JUDGE_PROMPT_OVERHEAD = 400  # the judge's instructions and criteria around the question and answers
USAGE_FIELDS = ("calls", "prompt_tokens", "completion_tokens")


def calls_per_item(mode: Mode, item: Any) -> int:
    """Calls a model's run of `mode` makes on `item` if nothing stops early: its passes and judge calls."""
    return (mode.passes(item) if mode.passes is not None else 0) + mode.judge_calls


class Estimate:
    """Usage per line of the estimate (a line is an endpoint, or an endpoint in a role such as
    "judge (judge)"), added to by what is asked, priced at the end."""

    def __init__(self, *, prompts: Prompts | None = None, image_tokens: int = IMAGE_TOKENS) -> None:
        self.prompts = prompts or Prompts()
        self.image_tokens = image_tokens
        self.lines: dict[str, dict] = {}  # line -> {"endpoint", "calls", "prompt_tokens", "completion_tokens"}

    # ------------------------------------------------------------ adding

    def add(self, endpoint: str, prompt_tokens: int, completion_tokens: int, *, times: int = 1, line: str = "") -> None:
        """`times` calls to `endpoint`, each of `prompt_tokens` in and `completion_tokens` out."""
        row = self.lines.setdefault(line or endpoint, {"endpoint": endpoint, **dict.fromkeys(USAGE_FIELDS, 0)})
        row["calls"] += times
        row["prompt_tokens"] += times * prompt_tokens
        row["completion_tokens"] += times * completion_tokens

    def add_requests(
        self, endpoint: str, requests: Iterable[Iterable[Mapping]], *, completion_tokens: int = DEFAULT_COMPLETION_TOKENS
    ) -> None:
        """One call per request (a list of chat messages) to `endpoint`."""
        for messages in requests:
            self.add(endpoint, estimate_prompt_tokens(messages, image_tokens=self.image_tokens), completion_tokens)

    def add_mode(
        self,
        mode: Mode,
        items: Iterable,
        *,
        model: str = "",
        judge: str = "",
        answers: Mapping[str, str] | None = None,
        judge_line: str = "",
    ) -> None:
        """What scoring `items` with `mode` asks of `model` (the model under test; "" when its answers
        are all given) and of `judge`: see the module docstring. An item's images are counted as it
        lists them (a caller that sends none passes items without them)."""
        answers = answers or {}
        for item in as_items(items):
            images = len(item.images) * self.image_tokens
            answered_here = bool(model) and mode.takes("answers") and not item.is_mcq and item.id not in answers
            if answered_here:
                self.add(model, self._question_tokens(item) + images, DEFAULT_COMPLETION_TOKENS)
            if not mode.scores(item):
                continue
            if mode.passes is not None and model:
                self.add(model, self._pass_tokens(item) + images, mode.pass_tokens, times=mode.passes(item))
            if mode.judge_calls and judge:
                self.add(
                    judge,
                    self._judge_tokens(item, answers.get(item.id), mode, answered_here) + images,
                    DEFAULT_COMPLETION_TOKENS,
                    times=mode.judge_calls,
                    line=judge_line,
                )

    # ------------------------------------------------------------ tokens of one call

    def _history(self, item) -> list[dict]:
        return [text_message(turn["role"], turn["content"]) for turn in item.history]

    def _question_tokens(self, item) -> int:
        return estimate_prompt_tokens([*self._history(item), text_message("user", item.question)])

    def _pass_tokens(self, item) -> int:
        """One pass: the question with every option (a rotation shows them all), or the open question."""
        if not item.is_mcq:
            return self._question_tokens(item)
        template = self.prompts.get("mcq_question", item.language)
        text = template.render(hint=item.hint or "", question=item.question, options=format_options(item.choices))
        return estimate_prompt_tokens([*self._history(item), text_message("user", text)])

    def _judge_tokens(self, item, answer: str | None, mode: Mode, answered_here: bool) -> int:
        text = f"{item.question}\n{item.reference_answer or ''}\n{answer or ''}"
        # An answer still to be asked (here or by the mode's own pass) is as long as a typical reply.
        to_ask = answer is None and (answered_here or mode.passes is not None)
        return (
            estimate_prompt_tokens([text_message("user", text)])
            + JUDGE_PROMPT_OVERHEAD
            + (DEFAULT_COMPLETION_TOKENS if to_ask else 0)
        )

    # ------------------------------------------------------------ the result

    def priced(self, endpoint_of: Callable[[str], Endpoint]) -> dict:
        """{"calls", "prompt_tokens", "completion_tokens", "cost", "lines": {line: usage and cost}};
        a cost is rounded to 6 places, None where an endpoint declares no prices."""
        lines, total = {}, 0.0
        for name, row in self.lines.items():
            usage = {key: row[key] for key in USAGE_FIELDS}
            price = cost(endpoint_of(row["endpoint"]), usage)
            lines[name] = {**usage, "cost": round(price, 6) if price is not None else None}
            total = None if price is None or total is None else total + price
        return {
            **{key: sum(row[key] for row in lines.values()) for key in USAGE_FIELDS},
            "cost": round(total, 6) if total is not None else None,
            "lines": lines,
        }
