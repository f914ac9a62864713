"""`submit`: send a predictions file to a benchforge evaluation server's submission window.

The release folder's manifest.json names the release (its `name` and `version`), which the server
checks against the window's release before it reads anything else; the server checks the file at
once (every item of the window's split present, none unknown, none twice, sizes) and answers with
each problem's line, or with the submission it will score. Python's standard library only."""

from __future__ import annotations

import argparse
import json
import os
import urllib.error
import urllib.request
import uuid
from pathlib import Path

from benchforge_harness.bundle import read_manifest
from benchforge_harness.commands import common
from benchforge_harness.io import InputError

NAME = "submit"
TOKEN_ENV = "BENCHFORGE_TEAM_TOKEN"
SERVER_ENV = "BENCHFORGE_SERVER"
TIMEOUT_SECONDS = 300


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        NAME,
        help="send a predictions file to an evaluation server's submission window",
        description="Send PREDICTIONS (the predictions format `infer` writes) to the submission window WINDOW of a "
        "benchforge evaluation server. The release folder's manifest.json names the release the file answers. The team's "
        f"API token is read from ${TOKEN_ENV} (or --token; the environment keeps it out of your shell history).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--predictions", required=True, type=Path, help="the predictions file (.jsonl)")
    parser.add_argument("--window", required=True, type=int, help="the window's number (on its page and in the invitation)")
    parser.add_argument("--server", default=os.environ.get(SERVER_ENV, ""), help=f"the server's address (default: ${SERVER_ENV})")
    parser.add_argument("--release", default=".", type=Path, help="the release folder or archive (default: .)")
    parser.add_argument("--model", default="", help="the model's name on the board (default: the file's 'model')")
    parser.add_argument("--token", default="", help=f"the team's API token (default: ${TOKEN_ENV})")
    parser.set_defaults(run=run)


def multipart(fields: dict[str, str], files: dict[str, tuple[str, bytes]]) -> tuple[bytes, str]:
    """A multipart/form-data body and its content type."""
    boundary = uuid.uuid4().hex
    parts: list[bytes] = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    for name, (filename, data) in files.items():
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        )
        parts.append(head.encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def send(url: str, token: str, body: bytes, content_type: str, opener=urllib.request.urlopen) -> tuple[int, dict]:
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": content_type, "Authorization": f"Team {token}", "Accept": "application/json"},
    )
    try:
        with opener(request, timeout=TIMEOUT_SECONDS) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read() or b"{}")
        except ValueError:
            return exc.code, {"detail": f"the server answered {exc.code} {exc.reason}"}


def run(args, opener=urllib.request.urlopen) -> int:
    token = args.token or os.environ.get(TOKEN_ENV, "")
    if not token:
        raise InputError(f"no team token: set ${TOKEN_ENV} (the token shown on your team's page)")
    if not args.server.startswith(("https://", "http://")):
        raise InputError(f"--server (or ${SERVER_ENV}) must be the server's http(s) address")
    if not args.predictions.is_file():
        raise InputError(f"{args.predictions}: not found")
    try:
        manifest = read_manifest(args.release)
    except (OSError, ValueError) as exc:
        raise InputError(f"{args.release}: not a release folder or archive with a manifest.json ({exc})") from None
    release = f"{manifest.get('name', '')} {manifest.get('version', '')}"
    url = f"{args.server.rstrip('/')}/api/v1/eval/windows/{args.window}/submissions/"
    body, content_type = multipart(
        {"model": args.model, "release": release}, {"predictions": (args.predictions.name, args.predictions.read_bytes())}
    )
    common.say(f"submit: sending {args.predictions} ({release}) to window {args.window} at {args.server}")
    status, answer = send(url, token, body, content_type, opener=opener)
    if status == 201:
        common.say(f"submit: accepted as submission {answer.get('id')} ({answer.get('model')}); it is being scored.")
        return 0
    common.say(f"submit: refused ({status}): {answer.get('detail', answer)}")
    for problem in answer.get("problems", []):
        common.say(f"  {problem}")
    return 1
