"""A small client for the Label Studio REST API: the few calls push and pull need.

It speaks the REST API with httpx (a core dependency) instead of label-studio-sdk: every SDK
2.x release pins pyjwt>=2.13 while zhipuai (a core dependency) pins pyjwt<2.9, so the SDK
cannot be installed next to the app. The endpoints used are the ones the SDK wraps.
"""

from __future__ import annotations

from typing import Any, Iterator

import httpx

from benchforge.errors import DomainError


class LabelStudioError(DomainError):
    """Label Studio could not be reached, refused us, or answered something unusable."""

    status = 502
    code = "labelstudio"


def _detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200].strip() or response.reason_phrase
    if isinstance(body, dict):
        detail = body.get("detail") or body.get("message") or ""
        errors = body.get("validation_errors")
        return f"{detail} {errors}".strip() if errors else str(detail or body)[:300]
    return str(body)[:300]


class LabelStudioClient:
    """The few Label Studio API calls we need. Accepts a legacy API token (sent as `Token`) or
    a personal access token (a JWT refresh token, exchanged for short-lived access tokens)."""

    PAGE_SIZE = 100

    def __init__(self, url: str, token: str, *, token_env: str = "the token variable", timeout: float = 60.0):
        if not url or not url.startswith(("http://", "https://")):
            raise LabelStudioError(f"The Label Studio URL must start with http:// or https:// (got '{url}').", code="labelstudio_config")
        if not token:
            raise LabelStudioError(f"No Label Studio access token: set the environment variable {token_env}.", code="labelstudio_config")
        self.url = url.rstrip("/")
        self.token_env = token_env
        self._token = token
        self._personal = token.count(".") == 2
        self._http = httpx.Client(base_url=self.url, timeout=timeout)
        self._auth = None if self._personal else f"Token {token}"

    def close(self) -> None:
        self._http.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _refresh_access(self) -> None:
        response = self._send("POST", "/api/token/refresh", json={"refresh": self._token}, auth=None)
        if response.status_code >= 400:
            self._fail("POST", "/api/token/refresh", response)
        self._auth = f"Bearer {response.json()['access']}"

    def _send(self, method: str, path: str, *, auth, **kwargs) -> httpx.Response:
        headers = {"Authorization": auth} if auth else {}
        try:
            return self._http.request(method, path, headers=headers, **kwargs)
        except httpx.TransportError as exc:
            raise LabelStudioError(
                f"Cannot reach Label Studio at {self.url} ({type(exc).__name__}: {exc}). "
                "Check the URL and that the server is running."
            ) from exc

    def _fail(self, method: str, path: str, response: httpx.Response):
        if response.status_code in (401, 403):
            raise LabelStudioError(
                f"Label Studio at {self.url} refused the access token (HTTP {response.status_code}: {_detail(response)}). "
                f"Put a valid token in the environment variable {self.token_env}: a personal access token, or a "
                "legacy token if legacy tokens are enabled on that server.",
                code="labelstudio_auth",
            )
        raise LabelStudioError(f"Label Studio answered HTTP {response.status_code} to {method} {path}: {_detail(response)}")

    def request(self, method: str, path: str, **kwargs) -> Any:
        if self._auth is None:
            self._refresh_access()
        response = self._send(method, path, auth=self._auth, **kwargs)
        if response.status_code == 401 and self._personal:  # access tokens live minutes: renew once
            self._refresh_access()
            response = self._send(method, path, auth=self._auth, **kwargs)
        if response.status_code >= 400:
            self._fail(method, path, response)
        return response.json() if response.content else None

    # -- projects

    def check(self) -> None:
        """Fail early with a clear message when the server or the token is wrong."""
        self.request("GET", "/api/projects/", params={"page_size": 1})

    def create_project(self, *, title: str, label_config: str, instructions: str = "") -> dict:
        return self.request("POST", "/api/projects/", json={
            "title": title, "label_config": label_config, "expert_instruction": instructions,
            "show_instruction": bool(instructions), "show_collab_predictions": True,
        })

    def get_project(self, project_id: int) -> dict:
        return self.request("GET", f"/api/projects/{project_id}/")

    def update_project(self, project_id: int, **fields) -> dict:
        return self.request("PATCH", f"/api/projects/{project_id}/", json=fields)

    # -- tasks and annotations

    def import_tasks(self, project_id: int, tasks: list[dict]) -> list[int]:
        body = self.request("POST", f"/api/projects/{project_id}/import", params={"return_task_ids": "true"}, json=tasks)
        ids = (body or {}).get("task_ids")
        if not isinstance(ids, list) or len(ids) != len(tasks):
            raise LabelStudioError(f"Label Studio imported {len(tasks)} tasks into project {project_id} but returned ids {ids!r}.")
        return ids

    def iter_tasks(self, project_id: int, include: str = "id,meta,total_annotations") -> Iterator[dict]:
        """Every task of a project, a page at a time, with only the `include`d fields."""
        page, seen = 1, 0
        while True:
            body = self.request("GET", "/api/tasks/", params={
                "project": project_id, "page": page, "page_size": self.PAGE_SIZE, "include": include,
            })
            tasks = body.get("tasks") or []
            yield from tasks
            seen += len(tasks)
            if not tasks or seen >= (body.get("total") or 0):
                return
            page += 1

    def task_annotations(self, task_id: int) -> list[dict]:
        return self.request("GET", f"/api/tasks/{task_id}/annotations/") or []
