"""Coverage and precision of the heuristic answer reader on the labelled corpus.

Run: .venv/bin/python bench/answer_reading.py [--misses]

The corpus (tests/harness/answer_corpus.py) labels each reply with the letter a careful human
reads, Z for none of the options, or "unsure". Printed: precision (letters read right / letters
read; must be 100%), coverage (replies read right / replies a human can read; the rest go to the
LLM extractor), and the same per option set. --misses lists the readable replies left to the
extractor.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchforge_harness.mcq import heuristic_choice  # noqa: E402
from tests.harness.answer_corpus import CASES, OPTION_SETS, UNSURE  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", action="store_true", help="list the readable replies the rules leave to the extractor")
    args = parser.parse_args()
    read = wrong = readable = right = 0
    per_set: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses, errors = [], []
    for name, reply, label in CASES:
        letter = heuristic_choice(reply, OPTION_SETS[name])
        if letter is not None:
            read += 1
            if letter != label:
                wrong += 1
                errors.append((name, reply, label, letter))
        if label != UNSURE:
            readable += 1
            per_set[name][0] += 1
            if letter == label:
                right += 1
                per_set[name][1] += 1
            else:
                misses.append((name, reply, label))
    unsure = len(CASES) - readable
    print(f"answer-reading corpus: {len(CASES)} replies ({readable} readable by a human, {unsure} unsure)")
    print(f"precision: {read - wrong}/{read} letters read right = {(read - wrong) / read:.1%}")
    print(f"coverage:  {right}/{readable} readable replies settled by the rules = {right / readable:.1%}")
    print(f"to the extractor: {len(CASES) - read} of {len(CASES)} replies")
    for name, (total, ok) in sorted(per_set.items()):
        print(f"  {name:<10} {ok:>3}/{total:<3} {ok / total:.0%}")
    for name, reply, label, letter in errors:
        print(f"WRONG [{name}] {reply!r}: read {letter}, human reads {label}")
    if args.misses:
        for name, reply, label in misses:
            print(f"miss [{name}] {reply!r} (human: {label})")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
