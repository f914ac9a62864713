"""Endpoints: one model behind one API, declared in a models TOML file (docs/models.toml.example).

API keys stay in environment variables the file names, never in the file.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError, LLMError

DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "zhipuai": "https://open.bigmodel.cn/api/paas/v4",
}
# The built-in offline demo (llm/demo.py): no URL, no key, no SDK; only a models file naming it uses it.
DEMO_PROVIDER = "demo"
DEMO_BASE_URL = "offline:demo"
PROVIDERS = (*DEFAULT_BASE_URLS, DEMO_PROVIDER)
# The request body fields the endpoint owns; a caller cannot override them through params.
RESERVED_PARAMS = ("model", "messages", "stream")

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ENDPOINT_KEYS = (
    "provider",
    "base_url",
    "model",
    "api_key_env",
    "vision",
    "max_concurrency",
    "requests_per_minute",
    "timeout",
    "max_retries",
    "params",
    "input_cost_per_mtok",
    "output_cost_per_mtok",
)
_REQUIRED_KEYS = ("provider", "model", "api_key_env")
_DEMO_REQUIRED_KEYS = ("provider", "model")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Endpoint:
    """One model behind one API. Validated on construction; `base_url` defaults per provider."""

    name: str
    provider: str
    base_url: str | None
    model: str
    api_key_env: str = ""
    vision: bool = False
    max_concurrency: int = 4
    requests_per_minute: float | None = None
    timeout: float = 60.0
    max_retries: int = 6
    params: dict = field(default_factory=dict, hash=False)
    # Prices per million tokens, in whatever currency unit the team uses; None: unknown.
    input_cost_per_mtok: float | None = None
    output_cost_per_mtok: float | None = None

    def __post_init__(self) -> None:
        where = f"[models.{self.name}]"

        def check(ok: bool, key: str, expected: str) -> None:
            if not ok:
                raise ConfigError(f"{where} {key} = {getattr(self, key)!r}: expected {expected}")

        check(self.provider in PROVIDERS, "provider", " or ".join(f'"{p}"' for p in PROVIDERS))
        if self.is_demo:
            check(self.base_url in (None, DEMO_BASE_URL), "base_url", "nothing: the demo provider runs offline")
            check(self.api_key_env in ("", None), "api_key_env", "nothing: the demo provider needs no key")
            object.__setattr__(self, "base_url", DEMO_BASE_URL)
            object.__setattr__(self, "api_key_env", "")
        elif self.base_url is None:
            object.__setattr__(self, "base_url", DEFAULT_BASE_URLS[self.provider])
        check(
            self.is_demo or (isinstance(self.base_url, str) and self.base_url.startswith(("http://", "https://"))),
            "base_url",
            "an http:// or https:// URL",
        )
        object.__setattr__(self, "base_url", self.base_url.rstrip("/"))
        check(isinstance(self.model, str) and bool(self.model.strip()), "model", "the provider's model name")
        check(
            self.is_demo or (isinstance(self.api_key_env, str) and bool(_ENV_NAME.fullmatch(self.api_key_env))),
            "api_key_env",
            'the NAME of the environment variable holding the key (e.g. "ZHIPUAI_API_KEY")',
        )
        check(isinstance(self.vision, bool), "vision", "true or false")
        check(
            isinstance(self.max_concurrency, int) and not isinstance(self.max_concurrency, bool) and self.max_concurrency >= 1,
            "max_concurrency",
            "a whole number >= 1",
        )
        check(
            self.requests_per_minute is None or (_is_number(self.requests_per_minute) and self.requests_per_minute > 0),
            "requests_per_minute",
            "a number > 0 (or leave it out for no limit)",
        )
        check(_is_number(self.timeout) and self.timeout > 0, "timeout", "seconds, a number > 0")
        object.__setattr__(self, "timeout", float(self.timeout))
        check(
            isinstance(self.max_retries, int) and not isinstance(self.max_retries, bool) and self.max_retries >= 0,
            "max_retries",
            "a whole number >= 0",
        )
        check(isinstance(self.params, dict), "params", f"a table ([models.{self.name}.params])")
        reserved = sorted(set(self.params) & set(RESERVED_PARAMS))
        if reserved:
            raise ConfigError(f"{where} params: {', '.join(reserved)} cannot be set here (the endpoint decides them)")
        object.__setattr__(self, "params", dict(self.params))
        for key in ("input_cost_per_mtok", "output_cost_per_mtok"):
            value = getattr(self, key)
            check(
                value is None or (_is_number(value) and value >= 0 and math.isfinite(value)),
                key,
                "a price per million tokens, a number >= 0 (or leave it out)",
            )

    @property
    def is_demo(self) -> bool:
        """The built-in offline demo: its replies are made up here, never a model's."""
        return self.provider == DEMO_PROVIDER

    def api_key(self) -> str:
        if self.is_demo:
            return ""
        key = os.environ.get(self.api_key_env, "").strip()
        if not key:
            raise LLMError(
                f"{self.label}: the environment variable {self.api_key_env} is not set; "
                f"set it to the API key for this endpoint (keys never go in the models file)",
                endpoint=self.name,
            )
        return key

    @property
    def label(self) -> str:
        if self.is_demo:
            return f"endpoint {self.name!r} (the offline demo provider, model {self.model})"
        return f"endpoint {self.name!r} ({self.model} at {self.base_url})"

    @property
    def identity(self) -> tuple[str, str, str]:
        """What the remote service sees: two names with the same identity are the same endpoint
        (they share its concurrency bound and its cached replies)."""
        return (self.provider, self.base_url, self.model)


def load_endpoints(path: str | os.PathLike) -> dict[str, Endpoint]:
    """Read a models file. Every problem raises ConfigError naming the file and the key."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: models file not found; create it (docs/models.toml.example shows the format)") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the models file ({exc.strerror})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None

    stray = sorted(set(data) - {"models"})
    if stray:
        raise ConfigError(f"{path}: unknown top-level key(s) {', '.join(stray)}; declare endpoints as [models.NAME] tables")
    models = data.get("models")
    if not isinstance(models, dict) or not models:
        raise ConfigError(f"{path}: declares no endpoints; add a [models.NAME] table (docs/models.toml.example)")

    endpoints: dict[str, Endpoint] = {}
    for name, table in models.items():
        where = f"{path}: [models.{name}]"
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: expected a table of settings, got {type(table).__name__}")
        if "api_key" in table:
            raise ConfigError(
                f"{where} api_key: keys never go in the models file; put the key in an "
                f'environment variable and name that variable with api_key_env = "..."'
            )
        unknown = sorted(set(table) - set(_ENDPOINT_KEYS))
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(_ENDPOINT_KEYS)}")
        required = _DEMO_REQUIRED_KEYS if table.get("provider") == DEMO_PROVIDER else _REQUIRED_KEYS
        missing = [key for key in required if key not in table]
        if missing:
            raise ConfigError(f"{where}: missing {', '.join(missing)} (required: {', '.join(required)})")
        try:
            endpoints[name] = Endpoint(name=name, **{"base_url": None, **table})
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
    return endpoints
