"""Input the database or the parser cannot take, refused at the door with a clear 400/413.

Every page and endpoint gets these checks from one middleware and one JSON parser, so a view
never sees a NUL byte (Postgres cannot store it), an integer beyond 64 bits (SQLite overflows),
JSON nested deep enough to exhaust the stack, or an upload bigger than its declared limit.
"""

import json
import math
import re
from dataclasses import dataclass
from functools import wraps

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.uploadhandler import FileUploadHandler, SkipFile
from django.http import QueryDict
from django.http.multipartparser import MultiPartParserError
from rest_framework import serializers
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from .errors import DomainError
from .middleware import domain_error_response

MAX_ID = 2**63 - 1  # the largest primary key (signed 64-bit) any of our databases stores
MAX_JSON_DEPTH = 64


class BadInput(DomainError):
    status = 400
    code = "bad_input"


class TooLarge(DomainError):
    status = 413
    code = "too_large"


_DIGITS = re.compile(r"[0-9]+")


def is_digits(text) -> bool:
    """ASCII digits only, the one test for "is this a whole number" on input. str.isdigit says
    yes to '²' (which int() then refuses: a 500) and to '٣' (which int() reads as 3); a test keeps
    isdigit() out of the code (tests/benchforge/test_bad_input.py)."""
    return isinstance(text, str) and _DIGITS.fullmatch(text) is not None


def parse_id(value, what: str = "id") -> int:
    """A primary key typed or posted by a person ("12", "#12", " 12 "), or a clear BadInput."""
    text = str(value).strip().lstrip("#")
    if not is_digits(text) or len(text) > 19 or not 1 <= int(text) <= MAX_ID:
        shown = str(value)[:40]
        raise BadInput(f"{what} must be a whole number from 1 to {MAX_ID}, not '{shown}'.")
    return int(text)


def parse_ids(values, what: str = "ids") -> list[int]:
    return [parse_id(v, what) for v in values if str(v).strip()]


def optional_id(value) -> int | None:
    """parse_id for optional query parameters: anything that is not a valid id means 'none given'."""
    try:
        return parse_id(value) if str(value or "").strip() else None
    except BadInput:
        return None


class _IdField(serializers.IntegerField):
    def to_internal_value(self, data):
        if isinstance(data, str) and not is_digits(data.strip()):
            self.fail("invalid")  # DRF's own reading would take '٣' as 3
        return super().to_internal_value(data)


def id_field(**kwargs) -> serializers.IntegerField:
    """A DRF integer field for primary keys: ASCII digits, bounded, so no value reaches the database
    as an overflow."""
    return _IdField(min_value=1, max_value=MAX_ID, **kwargs)


class ModelMultipleChoiceField(forms.ModelMultipleChoiceField):  # noqa: TID251 (the one home)
    """Django's field, bounded: a posted id past 64 bits is "not a valid value" like any other bad
    id, instead of an OverflowError from SQLite (Django guards `pk=` lookups, not `pk__in=`).
    Every form uses this one (ruff bans Django's, pyproject.toml)."""

    def _check_values(self, value):
        if self.to_field_name is None:
            for pk in value:
                text = str(pk).strip()
                if is_digits(text) and (len(text) > 19 or int(text) > MAX_ID):
                    raise ValidationError(
                        self.error_messages["invalid_pk_value"], code="invalid_pk_value", params={"pk": text[:40]}
                    )
        return super()._check_values(value)


class IdConverter:
    """`<id:...>` in URLs (registered in BenchforgeConfig.ready): a primary key. Unlike `<int:...>`
    it is bounded: ids longer than 18 digits cannot exist, so they are a 404, never an overflow
    inside the database driver."""

    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value) -> str:
        return str(value)


# ---- JSON bodies --------------------------------------------------------------------------------


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > 19 or not -MAX_ID - 1 <= int(text) <= MAX_ID:
        raise ValueError(f"the number {text[:30]}{'...' if len(text) > 30 else ''} is outside the 64-bit range")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:30]} is too large")
    return value


def _no_constants(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _check_json(value, depth: int = 0) -> None:
    if depth > MAX_JSON_DEPTH:
        raise ValueError(f"it is nested more than {MAX_JSON_DEPTH} levels deep")
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("a text value contains a NUL character (\\u0000), which cannot be stored")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_json(key, depth + 1)
            _check_json(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_json(item, depth + 1)


def loads_checked(text: str | bytes):
    """json.loads that refuses what the rest of the stack cannot handle (ValueError with the reason)."""
    try:
        value = json.loads(text, parse_int=_bounded_int, parse_float=_finite_float, parse_constant=_no_constants)
    except RecursionError:
        raise ValueError(f"it is nested more than {MAX_JSON_DEPTH} levels deep") from None
    _check_json(value)
    return value


class CheckedJSONParser(JSONParser):
    """DRF's JSON parser, plus the checks of `loads_checked`, as a 400 with the reason."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            return loads_checked(stream.read().decode(encoding))
        except UnicodeDecodeError:
            raise ParseError(f"JSON parse error - the body is not {encoding} text.") from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}.") from None


# ---- uploads --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UploadLimits:
    per_file: int
    per_request: int
    all_or_nothing: bool  # True: one file over its limit refuses the request (single-file forms)


UPLOAD_KINDS = {
    # kind: (setting of the per-file limit, setting of the whole request's limit, all or nothing)
    "images": ("BENCHFORGE_MAX_UPLOAD_BYTES", "BENCHFORGE_MAX_REQUEST_BYTES", False),
    "archive": ("BENCHFORGE_MAX_ARCHIVE_BYTES", "BENCHFORGE_MAX_ARCHIVE_BYTES", True),
    "data_file": ("BENCHFORGE_MAX_DATA_FILE_BYTES", "BENCHFORGE_MAX_DATA_FILE_BYTES", True),
}


def upload_limits_for(kind: str) -> UploadLimits:
    file_setting, request_setting, strict = UPLOAD_KINDS[kind]
    per_file = getattr(settings, file_setting)
    # The request carries multipart framing and the other fields too: allow a little more.
    return UploadLimits(per_file, getattr(settings, request_setting) + 64 * 1024, strict)


def accepts_uploads(kind: str):
    """Declare which files a view takes ("images", "archive" or "data_file"); every other view
    takes at most image-sized files. Works on function views and on DRF/Django view classes."""
    if kind not in UPLOAD_KINDS:
        raise ValueError(f"unknown upload kind {kind!r}")

    def decorate(view):
        if isinstance(view, type):
            view.upload_kind = kind
            return view

        @wraps(view)
        def wrapped(*args, **kwargs):
            return view(*args, **kwargs)

        wrapped.upload_kind = kind
        return wrapped

    return decorate


def _mb(n: int) -> str:
    return f"{n / 1e6:.0f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


@dataclass(frozen=True)
class RefusedUpload:
    position: int  # among the request's files, in the order sent
    name: str
    message: str


class SizeGuardHandler(FileUploadHandler):
    """First upload handler: counts each file's bytes as they stream in and drops a file the
    moment it passes its limit, so an oversized file is never written out in full."""

    def __init__(self, request, per_file: int):
        super().__init__(request)
        self.per_file = per_file
        self.received = 0
        self.position = -1

    def new_file(self, *args, **kwargs):
        super().new_file(*args, **kwargs)
        self.received = 0
        self.position += 1

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > self.per_file:
            self.request.refused_uploads.append(
                RefusedUpload(
                    self.position,
                    self.file_name or "upload",
                    f"the file is too large: the limit is {_mb(self.per_file)} per file; not uploaded",
                )
            )
            raise SkipFile()
        return raw_data

    def file_complete(self, file_size):
        return None


def refused_uploads(request) -> list[RefusedUpload]:
    """Files the guard dropped for being too large, in the order they were sent."""
    return list(getattr(request, "refused_uploads", []))


class RequestGuardMiddleware:
    """Runs before CSRF and every view: applies the view's upload limits while the body streams
    in, then refuses NUL bytes in query and form fields. Must come before CsrfViewMiddleware,
    which is the first to read a form body."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        kind = getattr(view_func, "upload_kind", None) or getattr(getattr(view_func, "view_class", None), "upload_kind", None)
        limits = upload_limits_for(kind or "images")
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > limits.per_request:
            return domain_error_response(
                request,
                TooLarge(
                    f"The request is {_mb(length)}; this page accepts at most {_mb(limits.per_request)}. Nothing was uploaded."
                ),
            )
        request.refused_uploads = []
        if request.method == "POST" and request.content_type == "multipart/form-data":
            request.upload_handlers.insert(0, SizeGuardHandler(request, limits.per_file))
            try:
                request.POST  # noqa: B018 - parse now, under these handlers, before CSRF reads it
            except MultiPartParserError as exc:
                return domain_error_response(request, BadInput(f"The upload is not a well-formed multipart body ({exc})."))
            if limits.all_or_nothing and request.refused_uploads:
                return domain_error_response(
                    request, TooLarge(" ".join(f"{r.name}: {r.message}." for r in request.refused_uploads))
                )
        for where, data in (
            ("query string", request.GET),
            ("form", request.POST if request.content_type in FORM_TYPES else QueryDict()),
        ):
            for key, values in data.lists():
                if "\x00" in key or any("\x00" in v for v in values):
                    return domain_error_response(
                        request,
                        BadInput(
                            f"The {where} field '{key.replace(chr(0), '')[:40]}' contains a NUL character, which is never valid text."
                        ),
                    )
        return None


FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")
