#!/usr/bin/env bash
# Runs the training code's Python (a script of inference/training and its arguments) on Debian's
# torch, with requirements.txt installed once into a virtual environment outside the repository that
# sees Debian's packages.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/vehicle-inspection"
venv="$cache/training-$(sha256sum "$here/requirements.txt" | cut -c1-12)"
if [ ! -x "$venv/bin/python" ]; then
  # Built aside and moved into place, so an install that failed half-way is not taken for done.
  mkdir -p "$cache"
  rm -rf "$venv.partial"
  /usr/bin/python3 -m venv --system-site-packages "$venv.partial"
  "$venv.partial/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  mv "$venv.partial" "$venv"
fi
cd "$here"
exec "$venv/bin/python" "$@"
