"""When a filter flags an item, and when its verdict can no longer change (METHODS section 6).

The harness's filter_flag / verdict_decided hold the published rules (more than half solve it;
none solves it). A run may move the line: `threshold` is a share of the models. Text-only and
judged: flagged when more than that share solves the item (0.5: more than half). All-fail:
flagged when at most that share solves it (0: none). With the defaults both agree with the
harness (tests/qc/test_rules.py checks every count).
"""

TEXT_ONLY, ALL_FAIL, JUDGED_TEXT_ONLY = "text_only", "all_fail", "judged_text_only"
DEFAULT_THRESHOLD = {TEXT_ONLY: 0.5, ALL_FAIL: 0.0, JUDGED_TEXT_ONLY: 0.5}


def flagged(filter: str, threshold: float, solved: int, models: int) -> bool:
    line = threshold * models
    if filter == ALL_FAIL:
        return solved <= line
    return solved > line


def decided(threshold: float, solved: int, failed: int, models: int) -> bool:
    """Whether the flag is settled whatever the models not yet counted (not asked, or whose call
    failed) would do: the solvers already pass the line, or cannot reach it any more. The same
    line decides every filter; only which side is flagged differs."""
    line = threshold * models
    still_open = models - solved - failed
    return solved > line or solved + still_open <= line
