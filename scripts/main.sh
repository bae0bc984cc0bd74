#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh) and runs the main job: torchvision resnet18 inference
# and an MLP training step through torch.compile(..., backend="inductor_cpp"), checked against
# eager, timed against eager and stock Inductor. Extra arguments go to the benchmark.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/scripts/setup.sh"
cd "$ROOT"
exec "$VENV_PYTHON" -m inductor_cpp.bench main "$@"
