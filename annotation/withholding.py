"""What a release keeps private: the one home of the setting. The release form and API offer
PARTS, a new release starts from DEFAULT_PRIVATE, the public bundle's rows are cut by
`withhold_row`, the dataset card states per split what is withheld from `per_split`, and the app
hides the same fields of a frozen release's items from annotators (`fields_withheld`).

The default is MMBench's: the test split's answer keys, reference answers and criteria stay
private; the dev split is public in full, so anyone can score dev with the bundled harness. A
researcher may publish more by leaving parts out; the form then says what becomes public
(`published_beyond_default`).

A part withholds one field of the rows of some splits. Fields are named as in items.jsonl:
"answer" (a multiple-choice item's correct letter), "reference_answer", "criteria"."""

from typing import NamedTuple

SPLITS = ("dev", "test")
FIELDS = ("answer", "reference_answer", "criteria")
FIELD_LABELS = {"answer": "answer keys", "reference_answer": "reference answers", "criteria": "per-sample criteria"}


class Part(NamedTuple):
    label: str
    field: str
    splits: tuple[str, ...]


PARTS = {
    "test_answers": Part("answer keys of the test split", "answer", ("test",)),
    "test_references": Part("reference answers of the test split", "reference_answer", ("test",)),
    "test_criteria": Part("per-sample criteria of the test split", "criteria", ("test",)),
    # Earlier releases' names, kept because frozen releases name them: these withhold every split.
    "reference_answers": Part("reference answers of every split (dev too)", "reference_answer", SPLITS),
    "criteria": Part("per-sample criteria of every split (dev too)", "criteria", SPLITS),
}
DEFAULT_PRIVATE = ("test_answers", "test_criteria", "test_references")
CHOICES = [(name, part.label) for name, part in PARTS.items()]


def default_private() -> list[str]:
    return list(DEFAULT_PRIVATE)


def fields_withheld(private, split: str | None) -> frozenset[str]:
    """The items.jsonl fields a public bundle withholds from a row of `split`."""
    return frozenset(PARTS[p].field for p in private if p in PARTS and split in PARTS[p].splits)


def withhold_row(row: dict, private) -> dict:
    """A copy of an items.jsonl row without what `private` withholds (the public bundle's view)."""
    hidden = fields_withheld(private, row.get("split"))
    out = {**row, "meta": dict(row.get("meta") or {})}
    if "answer" in hidden:
        out["answer"] = None
    if "reference_answer" in hidden:
        out["reference_answer"] = None
    if "criteria" in hidden:
        out["criteria"], out["meta"]["criteria_kinds"] = [], []
    return out


def per_split(private) -> dict[str, list[str]]:
    """{split: [labels of the fields the public bundle withholds]} in FIELDS order, for the card."""
    return {split: [FIELD_LABELS[f] for f in FIELDS if f in fields_withheld(private, split)] for split in SPLITS}


def statement(private) -> list[str]:
    """One sentence per split saying exactly what its public rows withhold."""
    lines = []
    for split, labels in per_split(private).items():
        if labels:
            lines.append(f"{split} split: withholds {_and(labels)} (they are in the private bundle only).")
        else:
            lines.append(f"{split} split: public in full (answer keys, reference answers and criteria included).")
    return lines


def published_beyond_default(private) -> list[str]:
    """What a release with `private` makes public that the default keeps private, in words."""
    out = []
    for split in SPLITS:
        default, chosen = fields_withheld(DEFAULT_PRIVATE, split), fields_withheld(private, split)
        shown = [FIELD_LABELS[f] for f in FIELDS if f in default and f not in chosen]
        if shown:
            out.append(f"the {split} split's {_and(shown)}")
    return out


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
