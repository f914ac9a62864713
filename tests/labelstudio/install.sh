#!/usr/bin/env bash
# Install the Label Studio server the interop tests run against, in its OWN virtualenv outside
# the repo (it pins its own Django/DRF, which must never meet the app's). Idempotent: when the
# venv already has the pinned version this returns in well under a second.
#   BENCHFORGE_LS_VENV   where (default ~/.cache/benchforge/labelstudio-<version>)
#   PYTHON               interpreter for the venv (default python3.11)
set -euo pipefail

LS_VERSION=1.23.2
VENV="${BENCHFORGE_LS_VENV:-$HOME/.cache/benchforge/labelstudio-$LS_VERSION}"
PYTHON="${PYTHON:-$(command -v python3.11 || command -v python3)}"
STAMP="$VENV/.benchforge-installed-$LS_VERSION"

if [ -f "$STAMP" ] && [ -x "$VENV/bin/label-studio" ]; then
  echo "Label Studio $LS_VERSION already in $VENV"
  exit 0
fi

started=$(date +%s)
echo "== installing Label Studio $LS_VERSION into $VENV (about 1 GB, about a minute)"
mkdir -p "$(dirname "$VENV")"
test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "label-studio==$LS_VERSION"
# Check by metadata: `label-studio --version` would migrate a database under ~/.local.
"$VENV/bin/python" -c "import importlib.metadata as m, sys; v = m.version('label-studio'); sys.exit(0 if v == '$LS_VERSION' else 'found label-studio ' + v)"
touch "$STAMP"
echo "== Label Studio $LS_VERSION installed in $(( $(date +%s) - started )) s"
