"""Schema-driven fuzzing of the whole API (schemathesis): valid and invalid requests generated from
/api/schema/, against real rows and random ones. Whatever it sends, no answer is a 5xx."""

import json
import os

import hypothesis
import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from schemathesis import GenerationMode

from benchforge.auth import create_token_for
from tests.factories import jpeg

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_image_indexes")]
EXAMPLES = int(os.environ.get("BENCHFORGE_FUZZ_EXAMPLES", "25"))
# The operations are dealt into shards, one test each, so parallel test processes share the minutes
# this takes; together the shards send every operation what one test used to.
SHARDS = 4


@pytest.fixture
def api_schema(settings):
    settings.ALLOWED_HOSTS = ["*"]  # the fuzzer's WSGI client calls itself "localhost"
    document = json.loads(OpenApiJsonRenderer().render(SchemaGenerator().get_schema(request=None, public=True)))
    schema = schemathesis.openapi.from_dict(document)
    schema.app = get_wsgi_application()
    # As Django's test client does: requests must not close the test's database connection.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield schema
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def _nothing_can_be_invalid(operation, fixed) -> bool:
    """Whether every value left to generate is a path parameter or an optional header or cookie that
    takes any string, with no query and no body: then no request can break the schema (on the wire
    these are strings), and schemathesis would reject about a thousand invalid draws before giving up."""
    if list(operation.body) or list(operation.query):
        return False
    generated = [p for p in operation.path_parameters if p.name not in (fixed or {})]
    generated += [*operation.headers, *operation.cookies]
    return all(
        p.definition.get("schema") == {"type": "string"}
        and (p.definition.get("in") == "path" or not p.definition.get("required"))
        for p in generated
    )


# Every operation of every app, 25 valid and 25 invalid examples against real rows and as many against
# random ones: minutes, and more as the API grows.
@pytest.mark.timeout(1500)
@pytest.mark.parametrize("shard", range(SHARDS), ids=lambda shard: f"shard {shard + 1} of {SHARDS}")
def test_no_api_operation_answers_a_server_error(api_schema, shard, researcher, benchmark, draft, annotator):
    from curation import services

    image = services.ingest_image(benchmark, jpeg(9900)).image
    real_rows = {"slug": benchmark.slug, "pk": draft.pk, "task_slug": "counting"}
    headers = {"Authorization": f"Token {create_token_for(researcher)}"}
    failures, calls, skipped = [], 0, []
    operations = sorted((result.ok() for result in api_schema.get_all_operations()), key=lambda op: op.label)
    assert len(operations) >= 20  # the whole API, not a corner of it
    mine = operations[shard::SHARDS]
    for operation in mine:
        names = {p.name for p in operation.path_parameters}
        real = {k: v for k, v in real_rows.items() if k in names}
        # Against real rows, then random ones; an operation with no real row to name runs once (the
        # examples are derandomized: a second run would send the very same requests).
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            for fixed in (real, None) if real else (None,):
                if mode == GenerationMode.NEGATIVE and _nothing_can_be_invalid(operation, fixed):
                    skipped.append(f"{operation.label} ({'real rows' if fixed else 'random rows'})")
                    continue
                strategy = operation.as_strategy(mode, path_parameters=fixed, headers=headers)

                @hypothesis.settings(
                    max_examples=EXAMPLES,
                    deadline=None,
                    database=None,
                    derandomize=True,
                    suppress_health_check=list(hypothesis.HealthCheck),
                    phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
                )
                @hypothesis.given(case=strategy)
                def send(case):
                    nonlocal calls
                    calls += 1
                    response = case.call()
                    if response.status_code >= 500:
                        failures.append(f"{operation.label} -> {response.status_code}: {case.as_curl_command()[:400]}")

                try:
                    send()
                except hypothesis.errors.Unsatisfiable:
                    pass  # nothing invalid to generate here (e.g. no parameters once the path is fixed)
    print(f"fuzz: {calls} requests over {len(mine)} of {len(operations)} operations, {len(failures)} server errors")
    print("no invalid request can be made for:", *skipped, sep="\n  ")
    assert image.pk and failures == []
