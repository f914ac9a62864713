"""Label Studio writes, by domain: the connection, push (tasks follow their items), pull (three-way
merge of annotations against each task's baseline), and the researcher's decisions on what a pull
could not apply. docs/labelstudio.md states the sync rules.

Tokens are read from the environment variable the benchmark's connection names; they are never
stored.
"""

from .common import PULL_ACTION
from .connection import check_server_url, open_client, save_connection
from .decisions import EDIT, HERE, TAKE, decide, set_reviewed_rule
from .pull import (
    ACCEPTED,
    ALL,
    APPLY_CHOICES,
    CONFLICT,
    DISAGREEMENT,
    FLAG,
    HELD,
    LATEST,
    SEVERAL_CHOICES,
    create_pull,
    pull_from_labelstudio,
    run_pull,
    start_pull,
)
from .push import (
    _image_data_url,
    create_push,
    gone_message,
    push_items_to_labelstudio,
    run_push,
    start_push,
    start_refresh,
    unlink,
)

__all__ = [
    "ACCEPTED",
    "ALL",
    "APPLY_CHOICES",
    "CONFLICT",
    "DISAGREEMENT",
    "EDIT",
    "FLAG",
    "HELD",
    "HERE",
    "LATEST",
    "PULL_ACTION",
    "SEVERAL_CHOICES",
    "TAKE",
    "_image_data_url",
    "check_server_url",
    "create_pull",
    "create_push",
    "decide",
    "gone_message",
    "open_client",
    "pull_from_labelstudio",
    "push_items_to_labelstudio",
    "run_pull",
    "run_push",
    "save_connection",
    "set_reviewed_rule",
    "start_pull",
    "start_push",
    "start_refresh",
    "unlink",
]
