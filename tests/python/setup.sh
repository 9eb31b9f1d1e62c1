#!/usr/bin/env bash
# The Python tools the export test reads gauntlet's exports with, in a virtual
# environment inside the checkout (target/python-exports): Inspect AI (its own log
# reader), jsonschema (the vendored CTRF schema) and Harbor's ATIF trajectory validator.
# Every package is pinned by version and wheel hash (requirements.txt, harbor.txt), so
# pip refuses anything else.
# Harbor declares Python >= 3.12 and pulls a whole agent framework; its trajectory
# models and validator need only pydantic (pinned above), so it is installed without
# its dependencies and its Python floor.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${1:-$here/../../target/python-exports}"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes -r "$here/requirements.txt"
"$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes --no-deps --ignore-requires-python -r "$here/harbor.txt"
"$venv/bin/python" -c "import inspect_ai, jsonschema, harbor.utils.trajectory_validator; print('export tools:', inspect_ai.__version__, jsonschema.__version__)"
