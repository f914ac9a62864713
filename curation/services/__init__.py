"""Writes of the curation app, by domain: taxonomy, ingest, dedup, contamination, screening and
bulk imports. Every public function is re-exported here, so callers import `curation.services`."""

from .contamination import (
    KnownSetImport,
    delete_known_set,
    hash_image_folder,
    import_known_set,
    parse_hash_list,
    rescan_contamination,
)
from .dedup import find_near_duplicates, resolve_near_duplicate, set_near_dup_threshold
from .imports import (
    IMPORT_KINDS,
    UrlRow,
    check_zip_members,
    create_import_job,
    parse_url_list,
    run_folder_import,
    run_url_list_import,
    run_zip_import,
    start_upload_import,
)
from .indexes import image_indexes, known_index
from .ingest import (
    THUMBNAIL_PX,
    IngestOutcome,
    check_tasks,
    image_limits,
    ingest_image,
    ingest_uploads,
)
from .screening import SCREEN_ACTIONS, screen_images
from .taxonomy import (
    create_benchmark,
    load_preset,
    run_preset_load,
    set_members,
    start_preset_load,
    tasks_by_slugs,
    unique_task_slug,
    update_task,
)

__all__ = [
    "IMPORT_KINDS",
    "SCREEN_ACTIONS",
    "THUMBNAIL_PX",
    "IngestOutcome",
    "KnownSetImport",
    "UrlRow",
    "check_tasks",
    "check_zip_members",
    "create_benchmark",
    "create_import_job",
    "delete_known_set",
    "find_near_duplicates",
    "hash_image_folder",
    "image_indexes",
    "image_limits",
    "import_known_set",
    "ingest_image",
    "ingest_uploads",
    "known_index",
    "load_preset",
    "parse_hash_list",
    "parse_url_list",
    "rescan_contamination",
    "resolve_near_duplicate",
    "run_folder_import",
    "run_preset_load",
    "run_url_list_import",
    "run_zip_import",
    "screen_images",
    "set_members",
    "set_near_dup_threshold",
    "start_preset_load",
    "start_upload_import",
    "tasks_by_slugs",
    "unique_task_slug",
    "update_task",
]
