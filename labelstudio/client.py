"""The one module that talks to Label Studio: a thin wrapper over label-studio-sdk with the few
calls push and pull need, answering plain JSON dicts, and the SDK's errors turned into
LabelStudioError messages a person can act on.

label-studio-sdk is the optional extra `labelstudio` (~500 MB with opencv, pandas, nltk), so it is
imported lazily, here only: without it the app runs, and the Label Studio page, the jobs and
`manage.py labelstudio` say what to install instead of failing with an ImportError.
"""

from __future__ import annotations

import importlib.util
from contextlib import contextmanager
from typing import Any, Iterator

import httpx

from benchforge.errors import DomainError

INSTALL_HINT = "pip install 'benchforge[labelstudio]'"
TIMEOUT_S = 60.0
CONNECT_TIMEOUT_S = 10.0
# Reads are retried by the SDK (connection refused, 5xx, 429) with backoff; writes never are: a
# retried import whose first try was stored after all would duplicate the tasks.
READ_RETRIES = 2
NO_RETRY = {"max_retries": 0}
NOT_FOUND = "labelstudio_not_found"


class LabelStudioError(DomainError):
    """Label Studio could not be reached, refused us, or answered something unusable."""

    status = 502
    code = "labelstudio"


def _missing_sdk_message(reason: str) -> str:
    return (
        f"Label Studio push and pull need the label-studio-sdk package, which this benchforge server cannot "
        f"import ({reason}). Install the optional extra: {INSTALL_HINT}"
    )


def sdk_problem() -> str | None:
    """What to tell a person when label-studio-sdk is not installed, else None. Cheap: finds the
    package without importing it (the import costs about half a second)."""
    try:
        found = importlib.util.find_spec("label_studio_sdk") is not None
    except (ImportError, ValueError):
        found = False
    return None if found else _missing_sdk_message("not installed")


def _sdk():
    try:
        import label_studio_sdk
    except ImportError as exc:
        raise LabelStudioError(_missing_sdk_message(str(exc) or "not installed"), code="labelstudio_sdk_missing") from exc
    return label_studio_sdk


def _api_error_class():
    _sdk()
    from label_studio_sdk.core.api_error import ApiError

    return ApiError


def _detail(body: Any) -> str:
    """The useful part of an error body Label Studio sent (JSON with detail/validation_errors, or text)."""
    if isinstance(body, dict):
        detail = body.get("detail") or body.get("message") or ""
        errors = body.get("validation_errors")
        return f"{detail} {errors}".strip() if errors else str(detail or body)[:300]
    return " ".join(str(body or "").split())[:200] or "(no details)"


def _plain(model) -> dict:
    """An SDK model as the JSON the server sent (datetimes as the same ISO strings)."""
    if isinstance(model, dict):
        return model
    if not hasattr(model, "model_dump"):  # the SDK's models do not validate: a wrong shape gets this far
        raise ValueError(f"expected an object, got {type(model).__name__} {str(model)[:50]!r}")
    return model.model_dump(mode="json", exclude_unset=True)


class LabelStudioClient:
    """The Label Studio calls push and pull need, over label-studio-sdk. Accepts a legacy API token
    or a personal access token (a JWT refresh token; the SDK exchanges it for short-lived access
    tokens and renews them before they expire)."""

    PAGE_SIZE = 100

    def __init__(
        self,
        url: str,
        token: str,
        *,
        token_env: str = "the token variable",
        timeout: float = TIMEOUT_S,
        retries: int = READ_RETRIES,
        transport: httpx.BaseTransport | None = None,
    ):
        if not url or not url.startswith(("http://", "https://")):
            raise LabelStudioError(
                f"The Label Studio URL must start with http:// or https:// (got '{url}').", code="labelstudio_config"
            )
        if not token:
            raise LabelStudioError(
                f"No Label Studio access token: set the environment variable {token_env}.", code="labelstudio_config"
            )
        sdk = _sdk()
        self.url = url.rstrip("/")
        self.token_env = token_env
        self.timeout = timeout
        # Our own httpx client: the timeout also bounds the SDK's token refresh (which bypasses its
        # per-request timeout), and redirects are not followed, so a server that passed the address
        # check cannot bounce us to another (internal) address. `transport` is for tests.
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT_S)), follow_redirects=False, transport=transport
        )
        try:
            # The trailing slash keeps a path prefix (https://host/ls/) in the SDK's token refresh URL.
            self._sdk = sdk.LabelStudio(
                base_url=self.url + "/", api_key=token, httpx_client=self._http, timeout=timeout, max_retries=retries
            )
        except BaseException as exc:
            self._http.close()
            if not isinstance(exc, _api_error_class()):
                raise
            # The SDK refuses an expired personal access token before any request.
            raise LabelStudioError(
                f"The Label Studio access token in {token_env} cannot be used: {_detail(exc.body)} Put a valid token "
                "in that variable: a personal access token, or a legacy token if legacy tokens are enabled on the server.",
                code="labelstudio_auth",
            ) from exc

    def close(self) -> None:
        self._http.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @contextmanager
    def _calls(self, action: str):
        """Run SDK calls, turning whatever they raise into a LabelStudioError naming `action`."""
        api_error = _api_error_class()
        try:
            yield
        except api_error as exc:
            raise self._api_error(exc, action) from exc
        except httpx.TimeoutException as exc:
            raise LabelStudioError(
                f"Label Studio at {self.url} did not answer within {self.timeout:g} s ({action}; {type(exc).__name__}). "
                "Check that the server is running and not overloaded."
            ) from exc
        except httpx.TransportError as exc:
            raise LabelStudioError(
                f"Cannot reach Label Studio at {self.url} ({type(exc).__name__}: {exc}). "
                "Check the URL and that the server is running."
            ) from exc
        except httpx.InvalidURL as exc:
            raise LabelStudioError(f"'{self.url}' is not a usable Label Studio URL ({exc}).", code="labelstudio_config") from exc
        except ValueError as exc:  # a body that is not the JSON the SDK expects (pydantic errors are ValueErrors too)
            raise LabelStudioError(
                f"Label Studio at {self.url} answered something benchforge cannot read ({action}: {type(exc).__name__}: "
                f"{str(exc)[:200]}). Is {self.url} a Label Studio server?"
            ) from exc

    def _api_error(self, exc, action: str) -> LabelStudioError:
        status, detail = exc.status_code, _detail(exc.body)
        if status in (401, 403):
            return LabelStudioError(
                f"Label Studio at {self.url} refused the access token (HTTP {status}: {detail}). "
                f"Put a valid token in the environment variable {self.token_env}: a personal access token, or a "
                "legacy token if legacy tokens are enabled on that server.",
                code="labelstudio_auth",
            )
        if status is not None and 300 <= status < 400:
            location = (exc.headers or {}).get("location", "another address")
            return LabelStudioError(
                f"Label Studio at {self.url} redirected {action} to {location} (HTTP {status}). benchforge does not "
                "follow redirects: set the Label Studio URL to the server's own address (https:// when it asks for it).",
                code="labelstudio_config",
            )
        if status is not None and 200 <= status < 300:  # a 2xx whose body is not JSON
            return LabelStudioError(
                f"Label Studio at {self.url} answered something benchforge cannot read ({action}: "
                f"{detail}). Is {self.url} a Label Studio server?"
            )
        if status == 404:
            return LabelStudioError(
                f"Label Studio at {self.url} has no such object ({action}: HTTP 404: {detail}). "
                "Was it deleted in Label Studio, or does the URL name another server?",
                code=NOT_FOUND,
            )
        return LabelStudioError(f"Label Studio answered HTTP {status} when {action}: {detail}")

    # -- projects

    def check(self) -> None:
        """Fail early with a clear message when the server or the token is wrong."""
        with self._calls("listing projects"):
            self._sdk.projects.list(page_size=1)  # fetches the first page only

    def create_project(self, *, title: str, label_config: str, instructions: str = "") -> dict:
        with self._calls(f"creating the project '{title}'"):
            return _plain(
                self._sdk.projects.create(
                    title=title,
                    label_config=label_config,
                    expert_instruction=instructions,
                    show_instruction=bool(instructions),
                    show_collab_predictions=True,
                    request_options=NO_RETRY,
                )
            )

    def get_project(self, project_id: int) -> dict:
        with self._calls(f"reading project {project_id}"):
            return _plain(self._sdk.projects.get(id=project_id))

    def project_or_none(self, project_id: int) -> dict | None:
        """The project, or None when the server says it does not exist (deleted in Label Studio)."""
        try:
            return self.get_project(project_id)
        except LabelStudioError as exc:
            if exc.code == NOT_FOUND:
                return None
            raise

    def delete_project(self, project_id: int) -> None:
        with self._calls(f"deleting project {project_id}"):
            self._sdk.projects.delete(id=project_id, request_options=NO_RETRY)

    def update_project(self, project_id: int, **fields) -> dict:
        with self._calls(f"updating project {project_id}"):
            return _plain(self._sdk.projects.update(id=project_id, **fields))

    # -- tasks and annotations

    def import_tasks(self, project_id: int, tasks: list[dict]) -> list[int]:
        with self._calls(f"importing {len(tasks)} tasks into project {project_id}"):
            response = self._sdk.projects.import_tasks(
                id=project_id, request=tasks, return_task_ids=True, request_options=NO_RETRY
            )
        ids = getattr(response, "task_ids", None)  # not in the SDK's model: an extra field of the reply
        if not isinstance(ids, list) or len(ids) != len(tasks):
            raise LabelStudioError(
                f"Label Studio imported {len(tasks)} tasks into project {project_id} but returned ids {ids!r}."
            )
        return ids

    def iter_tasks(self, project_id: int, include: str = "id,meta,total_annotations") -> Iterator[dict]:
        """Every task of a project, a page at a time (the SDK's pager), with only the `include`d
        fields: tasks carry their images inline, so never more than asked for."""
        with self._calls(f"listing the tasks of project {project_id}"):
            pager = self._sdk.tasks.list(project=project_id, page_size=self.PAGE_SIZE, include=include, fields="task_only")
            for task in pager:
                yield _plain(task)

    def iter_tasks_with_work(self, project_id: int) -> Iterator[dict]:
        """Every task of a project with its meta, predictions and annotations (results included),
        a page at a time, without its data (the inline images): one paged listing instead of a
        request per task."""
        omit = {"omit": ",".join(self.HEAVY_TASK_FIELDS)}
        with self._calls(f"listing the tasks and annotations of project {project_id}"):
            pager = self._sdk.tasks.list(
                project=project_id,
                page_size=self.PAGE_SIZE,
                fields="all",
                request_options={"additional_query_parameters": omit},
            )
            for task in pager:
                yield _plain(task)

    # Left out of a full task listing: the data (inline images) and what the data manager derives.
    HEAVY_TASK_FIELDS = ("data", "drafts", "annotations_results", "predictions_results", "annotators", "comment_authors")

    def update_task(self, task_id: int, *, data: dict, meta: dict) -> None:
        with self._calls(f"updating task {task_id}"):
            self._sdk.tasks.update(id=str(task_id), data=data, meta=meta)

    def predictions_of(self, project_id: int, model_version: str) -> dict[int, list[dict]]:
        """{task id: [its predictions of `model_version`]} for a whole project, in one request."""
        found: dict[int, list[dict]] = {}
        with self._calls(f"listing the predictions of project {project_id}"):
            for prediction in self._sdk.predictions.list(project=project_id):
                prediction = _plain(prediction)
                if prediction.get("model_version") == model_version:
                    found.setdefault(prediction.get("task"), []).append(prediction)
        return found

    def replace_prediction(self, task_id: int, *, old_ids, result: list[dict], model_version: str) -> dict | None:
        """Our pre-annotation of a task, replaced by `result` (other models' predictions stay): the
        new prediction (its id and created_at), or None when `result` is empty."""
        with self._calls(f"replacing the pre-annotation of task {task_id}"):
            for prediction_id in old_ids:
                self._sdk.predictions.delete(id=prediction_id)
            if not result:
                return None
            return _plain(
                self._sdk.predictions.create(task=task_id, result=result, model_version=model_version, request_options=NO_RETRY)
            )
