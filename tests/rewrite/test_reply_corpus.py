"""Every case of the rewrite-reply corpus keeps exactly the rewrites a careful human keeps; the seed
itself is never kept, however it is labelled."""

import pytest

from rewrite.parsing import normalized, parse_reply
from tests.rewrite.reply_corpus import CASES


def test_the_corpus_covers_both_template_languages():
    assert len(CASES) >= 80
    assert {name.split("-")[0] for name, *_ in CASES} == {"zh", "en"}


@pytest.mark.parametrize("name,seed,n,reply,kept", CASES, ids=[case[0] for case in CASES])
def test_the_parser_keeps_what_a_careful_human_keeps(name, seed, n, reply, kept):
    result = parse_reply(reply, seed=seed, n=n)
    assert result.rewrites == kept
    assert normalized(seed) not in {normalized(text) for text in result.rewrites}
    # Nothing disappears silently: every non-blank line is kept or dropped with a reason.
    if not reply.lstrip().startswith(("[", "{", "```json")):
        lines = [line for line in reply.splitlines() if line.strip() and not line.strip().startswith("```")]
        assert len(result.rewrites) + len(result.dropped) == len(lines)
