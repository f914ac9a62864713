"""gunicorn keeps idle connections longer than clients reuse them (issue 45: requests dropped with
"Server disconnected without sending a response" under the soak)."""

from pathlib import Path

import httpx
from gunicorn.config import Config

ROOT = Path(__file__).resolve().parents[2]


def test_gunicorn_started_in_the_code_folder_outlives_the_clients_idle_connections():
    config = Config()
    namespace: dict = {}
    exec(compile((ROOT / "gunicorn.conf.py").read_text(), "gunicorn.conf.py", "exec"), namespace)  # noqa: S102
    for name, value in namespace.items():
        if name in config.settings:
            config.set(name, value)
    client_idle = httpx.Limits().keepalive_expiry  # what httpx (the API clients, bench/soak.py) reuses: 5 s
    assert config.keepalive > client_idle
    assert config.keepalive >= 60  # a reverse proxy's usual upstream idle timeout stays below it
