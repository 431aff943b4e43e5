#!/usr/bin/env bash
# Idempotent: make sure a Python venv with ray[default]==2.60.0 (and numpy,
# which `ray microbenchmark` imports but ray[default] does not pull in) exists.
# Venv location: ${WRAY_RAY_VENV:-$HOME/.cache/wray/ray-venv}
set -euo pipefail

RAY_VERSION="2.60.0"
NUMPY_VERSION="2.4.6"
VENV="${WRAY_RAY_VENV:-$HOME/.cache/wray/ray-venv}"
PYTHON="${PYTHON:-python3}"

export RAY_USAGE_STATS_ENABLED=0

if [ ! -x "$VENV/bin/python" ]; then
    echo "setup.sh: creating venv at $VENV (with $("$PYTHON" --version 2>&1))"
    mkdir -p "$(dirname "$VENV")"
    "$PYTHON" -m venv "$VENV"
else
    echo "setup.sh: venv exists at $VENV"
fi

have_ray="$("$VENV/bin/python" -c 'import ray; print(ray.__version__)' 2>/dev/null || true)"
have_np="$("$VENV/bin/python" -c 'import numpy; print(numpy.__version__)' 2>/dev/null || true)"
if [ "$have_ray" = "$RAY_VERSION" ] && [ -n "$have_np" ]; then
    echo "setup.sh: ray $have_ray and numpy $have_np already installed"
    exit 0
fi

echo "setup.sh: found ray '${have_ray:-none}', numpy '${have_np:-none}';" \
    "installing ray[default]==$RAY_VERSION numpy==$NUMPY_VERSION (a minute or two)"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "ray[default]==$RAY_VERSION" "numpy==$NUMPY_VERSION"
echo "setup.sh: installed ray $("$VENV/bin/python" -c 'import ray; print(ray.__version__)')," \
    "numpy $("$VENV/bin/python" -c 'import numpy; print(numpy.__version__)')"
