"""The built-in demo endpoints (provider "demo", benchforge_harness/llm/demo.py): offline, no key,
made-up replies. `make run` writes them as the models file when none exists, so every stage can
be tried at once; a models file of your own replaces them."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

DEMO_MODELS = """# Written by `make run` because no models file existed: the built-in DEMO endpoints.
# Provider "demo" runs offline with no key; its replies are made up (labelled as demo output),
# never a model's. Replace this file with your own endpoints (docs/models.toml.example).

[models.demo-strong]
provider = "demo"
model = "demo-strong"
vision = true

[models.demo-fair]
provider = "demo"
model = "demo-fair"
vision = true

[models.demo-weak]
provider = "demo"
model = "demo-weak"
vision = true

[models.demo-judge]
provider = "demo"
model = "demo-judge"
vision = true
"""
ANSWERING = ["demo-strong", "demo-fair", "demo-weak"]
JUDGE = "demo-judge"


def ensure_demo_models(path: Path | None = None) -> Path | None:
    """Write the demo endpoints as the models file when there is none; the path written, or None."""
    path = Path(path or settings.BENCHFORGE_MODELS)
    if path.exists():
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(DEMO_MODELS, encoding="utf-8")
    return path


def demo_endpoints_ready() -> bool:
    """The models file declares the demo endpoints the seeded stages use."""
    from .client import LLMConfigError, load_models

    try:
        endpoints = load_models()
    except LLMConfigError:
        return False
    return all(name in endpoints and endpoints[name].is_demo for name in [*ANSWERING, JUDGE])


def demo_names(names) -> list[str]:
    """Those of `names` that the models file declares as demo endpoints, in order, once each."""
    from .client import LLMConfigError, load_models

    try:
        endpoints = load_models()
    except LLMConfigError:
        return []
    return [name for name in dict.fromkeys(names) if name in endpoints and endpoints[name].is_demo]
