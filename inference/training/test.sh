#!/usr/bin/env bash
# The training code's unit tests (npm run test:training).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exec bash "$here/python.sh" -m unittest discover -s "$here"
