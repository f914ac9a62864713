"""Every setting the code reads from the environment is in the README's variable table, and
docs/deploy.md walks a deployment from an empty bucket to a served app."""

import re

from tests.conftest import REPO_ROOT

# Read from the environment, but not settings a deployment chooses.
NOT_SETTINGS = {"DJANGO_SETTINGS_MODULE", "RUN_MAIN"}
READ = re.compile(r"""(?:environ\.get|getenv|env_bool|environ\[|\benv\.get|env_float|env_int)\(?\s*["']([A-Z][A-Z0-9_]+)["']""")
SKIP = {".venv", "tests", "bench", "node_modules", ".git", "benchforge_harness"}


def _read_from_environment() -> set[str]:
    names = set()
    for path in REPO_ROOT.rglob("*.py"):
        if SKIP & set(path.relative_to(REPO_ROOT).parts):
            continue
        names |= set(READ.findall(path.read_text(encoding="utf-8")))
    return names - NOT_SETTINGS


def _readme_table() -> str:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    return "\n".join(line for line in readme.splitlines() if line.startswith("| `"))


def test_every_setting_read_from_the_environment_is_in_the_readme_table():
    names = _read_from_environment()
    assert {"STATIC_ROOT", "CSRF_TRUSTED_ORIGINS", "BENCHFORGE_JOB_HEARTBEAT_SECONDS", "BENCHFORGE_JOB_MAX_RECOVERIES"} <= names
    table = _readme_table()
    missing = sorted(name for name in names if f"`{name}`" not in table)
    assert not missing, f"not in the README's variable table: {missing}"


def test_the_deployment_guide_starts_from_an_empty_bucket_and_ends_with_a_served_app():
    guide = (REPO_ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    for needed in (
        "create the bucket",
        "redirects plain HTTP to HTTPS",
        "/static/",
        "STATIC_ROOT",
        "collectstatic",
        "celery -A benchforge worker",
        "in the code's folder",
        "BENCHFORGE_JOB_MAX_RECOVERIES",
    ):
        assert needed.lower() in guide.lower(), needed
