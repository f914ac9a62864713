"""A stranger's machine: a clean virtualenv holding only the harness wheel a release carries (and
the openai SDK it names as an extra) verifies the release, answers its questions and judges the
answers on its dev split, against the loopback server.

Offline: the virtualenv gets pip from Python's own ensurepip, and `pip install --no-index
--find-links WHEELHOUSE "<wheel>[openai]"` resolves the extra from the wheel's metadata using only
the wheels `make setup` saved in .venv/wheelhouse (pip download of the extra's requirements). No
--system-site-packages, no PYTHONPATH, no pip configuration of this machine: nothing of the
platform's environment is visible inside."""

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

import benchforge_harness
from benchforge_harness import distribution
from tests.conftest import require

from .conftest import WHEELHOUSE, clean_machine, code_block, run_as_shown, stored


def test_a_clean_virtualenv_with_only_the_bundled_wheel_scores_the_dev_split(built, tmp_path, fake_llm):
    require(
        WHEELHOUSE.is_dir() and any(WHEELHOUSE.glob("openai-*.whl")),
        f"the wheels of the openai extra in {WHEELHOUSE} (make setup)",
    )
    release = built()
    with tarfile.open(stored(release, "private.tar.gz")) as archive:
        archive.extractall(tmp_path, filter="data")
    root = tmp_path / release.top
    wheel = root / distribution.wheel_name()
    assert wheel.is_file()
    assert f'pip install "./{wheel.name}[openai]"' in (root / "README.md").read_text(encoding="utf-8")

    clean = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    clean.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")  # pip never goes online
    venv = tmp_path / "clean"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=clean)
    python, script = venv / "bin" / "python", venv / "bin" / "benchforge-harness"
    install = subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--no-index", "--find-links", WHEELHOUSE, f"{wheel}[openai]"],
        env=clean,
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    names = "import importlib.metadata as m; print('\\n'.join(d.metadata['Name'].lower() for d in m.distributions()))"
    listed = subprocess.run([python, "-c", names], cwd=tmp_path, env=clean, capture_output=True, text=True, check=True)
    installed = set(listed.stdout.split())
    assert {"benchforge-harness", "openai"} <= installed
    assert not installed & {"django", "celery", "pyarrow", "numpy", "benchforge-platform"}, installed
    where = subprocess.run(
        [python, "-I", "-c", "import benchforge_harness; print(benchforge_harness.__file__)"],
        cwd=root,
        env=clean,
        capture_output=True,
        text=True,
        check=True,
    )
    # What the console script imports (-I: like a script, no current folder on the path): the wheel's
    # harness, not the bundle's folder.
    assert where.stdout.startswith(str(venv)), where.stdout

    models = tmp_path / "models.toml"  # outside the bundle: verify checks the bundle exactly
    models.write_text(
        f'[models.vlm]\nprovider = "openai"\nbase_url = "{fake_llm.base_url("openai")}"\nmodel = "vlm"\n'
        'api_key_env = "FAKE_KEY"\nvision = true\n\n'
        f'[models.judge]\nprovider = "openai"\nbase_url = "{fake_llm.base_url("openai")}"\nmodel = "judge"\napi_key_env = "FAKE_KEY"\n'
    )
    fake_llm.script("vlm", "There are three apples.")
    fake_llm.script("judge", '{"rating": 7, "reason": "correct"}')
    env = {**clean, "FAKE_KEY": "test-key", "BENCHFORGE_MODELS": str(models)}

    def run(*args):
        return subprocess.run([script, *args], cwd=root, env=env, capture_output=True, text=True, timeout=300)

    verified = run("verify", ".")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    infer = run("infer", "--model", "vlm", "--workers", "1", "--no-cache")
    assert infer.returncode == 0, infer.stderr
    items = [json.loads(line) for line in (root / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    dev = {i["id"] for i in items if i["split"] == "dev" and not i["choices"]}
    assert 0 < len(dev) < sum(1 for i in items if not i["choices"])
    answers = [json.loads(line) for line in (root / "predictions" / "vlm.jsonl").read_text(encoding="utf-8").splitlines()]
    dev_predictions = tmp_path / "vlm-dev.jsonl"
    dev_predictions.write_text("".join(json.dumps(a) + "\n" for a in answers if a["id"] in dev), encoding="utf-8")

    judged = run(
        "judge", "--judge", "judge", "--predictions", str(dev_predictions), "--workers", "1", "--no-cache", "--out", "out"
    )
    assert judged.returncode == 0, judged.stderr
    results = json.loads((root / "out" / "results.json").read_text(encoding="utf-8"))
    scored = results["models"]["vlm"]
    assert scored["judged"] == len(dev) and scored["errors"] == 0 and scored["mean"] == 7
    assert len(fake_llm.requests("judge")) == len(dev)
    # One semantic version: the wheel's, the release manifest's and the scores'.
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["harness_version"] == results["harness_version"] == benchforge_harness.__version__
    assert wheel.name == f"benchforge_harness-{benchforge_harness.__version__}-py3-none-any.whl"


def test_the_cards_commands_run_as_shown_on_a_machine_with_only_python(built, tmp_path, fake_llm):
    require(
        WHEELHOUSE.is_dir() and any(WHEELHOUSE.glob("openai-*.whl")),
        f"the wheels of the openai extra in {WHEELHOUSE} (make setup)",
    )
    release = built()
    with tarfile.open(stored(release, "public.tar.gz")) as archive:
        archive.extractall(tmp_path, filter="data")
    root = tmp_path / release.top
    card = (root / "README.md").read_text(encoding="utf-8")
    lines = code_block(card, "## Scoring")
    assert lines[0].startswith("python -m venv ") and lines[1].startswith("pip install ")
    # What the card asks for in words: models.toml here, declaring my-vlm and my-judge, and their key.
    (root / "models.toml").write_text(
        f'[models.my-vlm]\nprovider = "openai"\nbase_url = "{fake_llm.base_url("openai")}"\nmodel = "vlm"\n'
        'api_key_env = "FAKE_KEY"\nvision = true\n\n'
        f'[models.my-judge]\nprovider = "openai"\nbase_url = "{fake_llm.base_url("openai")}"\nmodel = "judge"\n'
        'api_key_env = "FAKE_KEY"\n',
        encoding="utf-8",
    )

    def vlm(body) -> str:
        shown = dict(re.findall(r"^([A-Z])\. (.+)$", json.dumps(body).replace("\\n", "\n"), flags=re.M))
        return next((letter for letter, text in shown.items() if text.startswith("three")), "There are three apples.")

    fake_llm.script("vlm", vlm)
    fake_llm.script("judge", '{"rating": 7, "reason": "correct"}')
    env = {**clean_machine(tmp_path), "FAKE_KEY": "test-key"}

    ran = run_as_shown(lines, root, env)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    items = [json.loads(line) for line in (root / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    judged = json.loads((root / "results" / "judge" / "results.json").read_text(encoding="utf-8"))["models"]["my-vlm"]
    dev_open = [i for i in items if not i["choices"] and i["split"] == "dev"]
    assert judged["judged"] == len(dev_open) and judged["mean"] == 7
    mcq = json.loads((root / "results" / "mcq" / "results.json").read_text(encoding="utf-8"))["models"]["my-vlm"]
    assert mcq["n"] == sum(1 for i in items if i["choices"] and i["split"] == "dev") and mcq["circular"] == 1.0
    unkeyed = sum(1 for i in items if i["choices"] and not i["answer"])
    assert (
        f"mcq: {unkeyed} multiple-choice item(s) cannot be scored: this public bundle withholds their answer keys" in ran.stderr
    )
    assert not (root / "harness-env").exists() and (tmp_path / "harness-env" / "bin" / "benchforge-harness").is_file()

    # The harness README's first commands, in a bundle folder of the name it uses, on a machine as clean.
    shutil.rmtree(tmp_path / "harness-env")
    (root / "models.toml").unlink()
    readme = (root / "benchforge_harness" / "README.md").read_text(encoding="utf-8")
    lines = code_block(readme, "Run every command from the release folder")
    assert lines[0] == "cd my-benchmark-1.0/"
    root.rename(tmp_path / "my-benchmark-1.0")
    ran = run_as_shown(lines, tmp_path, env)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert "usage: python -m benchforge_harness" in ran.stdout + ran.stderr and "is intact" in ran.stderr
