"""Every write to items, by domain: item edits and status changes (items), what makes an item
well formed and complete (validation), assignments and queues, imports of external items.

Two levels of validation:
- the *shape* of an item is checked on every save (known kinds, at most 3 criteria and 4
  options, a well-formed dialogue history, usable images...), so nothing malformed is stored;
- its *completeness* (`readiness_problems`) is what a draft still lacks before it can be
  submitted for review (question, reference answer, 1-3 criteria with text, distinct
  options and an answer key, non-empty turns...). Drafts may be incomplete: they autosave.
"""

from .assignments import (
    assign_evenly,
    assign_images,
    assign_items,
    cancel_assignments,
    next_assignment,
    reassign,
    remaining_quota,
    start_assignment,
)
from .imports import (
    ALIGNMMBENCH_JOB,
    import_alignmmbench,
    import_external_items,
    start_alignmmbench_import,
)
from .items import (
    change_status,
    change_status_many,
    check_can_edit,
    create_item,
    lock_item,
    lock_items,
    reopen_assignment,
    requeue_for_author,
    return_to_draft,
    submit_item,
    update_item,
    withhold_in_app,
)
from .validation import image_refusals, readiness_problems

__all__ = [
    "ALIGNMMBENCH_JOB",
    "ROLES_IN_TURN",
    "assign_evenly",
    "assign_images",
    "assign_items",
    "cancel_assignments",
    "change_status",
    "change_status_many",
    "check_can_edit",
    "create_item",
    "image_refusals",
    "import_alignmmbench",
    "import_external_items",
    "item_snapshot",
    "lock_item",
    "lock_items",
    "next_assignment",
    "readiness_problems",
    "reassign",
    "remaining_quota",
    "reopen_assignment",
    "requeue_for_author",
    "return_to_draft",
    "start_alignmmbench_import",
    "start_assignment",
    "submit_item",
    "update_item",
    "withhold_in_app",
]
