# Sourced by scripts/demo, scripts/test and scripts/bench: make .venv (once) and install the
# package with its test extras whenever pyproject.toml changed. Needs only python3 (>= 3.11).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
VENV="$ROOT/.venv"
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "kubectl-dra needs Python >= 3.11")'
  "$PYTHON" -m venv "$VENV"
fi
STAMP="$VENV/.kubectl-dra-installed"
WANT="$(cat "$ROOT/pyproject.toml" | cksum)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >/dev/null
  # setuptools announces every editable install with a UserWarning ("be careful with folders ...")
  # that says nothing about this project: keep it out of a first run's output
  PYTHONWARNINGS="ignore::UserWarning" "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    -e "$ROOT[test]"
  echo "$WANT" > "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
cd "$ROOT"
