#!/usr/bin/env bash
# The CUDA paths on a GPU machine, in one run of a few minutes that keeps what it made.
#
#   bash benchmarks/gpu_session.sh [--device cuda|cpu] [--out DIR] [--size 4GiB]
#       [--scratch DIR] [--budget SECONDS] [--steps cuda-tests,tiers,measure,loader]
#       [--wheels DIR] [--pack]
#
# Steps, in order, each under its own time limit within one overall budget (on cuda 540 s
# by default, so that the whole run fits a 10-minute command), each writing its output
# under --out (default: $OUT) as soon as it ends; a failed step never stops the next
# ones. The order puts first what a lent machine is for (the CUDA paths' tests, then the
# tiers validation on the GPU), since a budget spent skips the rest; --steps runs only
# those named (in this order, whatever theirs) after setup and env, which always run:
#   setup       an interpreter with the project's requirements (on cuda, one whose torch
#               sees the GPU): a carried-over .venv, a .venv-gpu from an earlier run, the
#               machine's python3, else `pip install -e .[test,calibration]` into .venv-gpu
#               (with the machine's own packages visible, so a CUDA torch there is used);
#               first, the wheels in --wheels (default .whl, where it exists) are
#               installed into a directory on PYTHONPATH, for a machine with no package
#               index whose python3 lacks a few of the requirements;
#   env         GPU and driver (nvidia-smi), python, torch and torch.cuda, CPUs, memory,
#               and the scratch directory, the first of --scratch, /var/tmp, the
#               repository and /tmp where O_DIRECT works and the files fit;
#   cuda-tests  `pytest -m cuda` over the files that mark tests so (without a GPU they
#               skip: the dry-run shows they are collected);
#   tiers       on cuda only: python -m calibration.validate --scenario tiers --quick
#               --policies startup-aware, its 1-2 GB checkpoints loaded onto the GPUs
#               (both servers on one where the box has one) from DRAM, SSD and the
#               loopback remote store (its report under tiers/);
#   measure     python -m calibration.measure writing profile-<device name>.json;
#   migration   no step of its own: measure's last probe migrates tokens onto the device
#               and cuda-tests checks that a migration onto the GPU continues identically;
#   loader      benchmarks/loader.py --json on a --size checkpoint: raw O_DIRECT, thaw,
#               safetensors and torch.load, cold and warm, and the host-to-device copy
#               ceiling (pinned, on a GPU) beside them.
# summary.txt gets one line per step (status, wall seconds, output) as each ends, then
# the tally; the exit status is 0 only if every step that was to run ran ok (one not in
# --steps, or tiers on the CPU, is recorded skipped and not counted; one the budget left
# no time for counts against it). --device cpu is the dry-run of the same steps, small:
# a 256MiB checkpoint and `measure --quick`. --pack puts each step's output into one
# archive, STEP.tgz, as the step ends, for a machine that gives back only a few files.
set -uo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
DEVICE=cuda
OUT_DIR=${OUT:-}
SIZE=""
SCRATCH_ARG=""
BUDGET=""
ASKED="cuda-tests,tiers,measure,loader" # the steps --steps may name, all by default
WHEELS=""
PACK=""
LOADER_RUNS=3
RESERVE_S=5 # kept back from the budget for the summary

die() {
    echo "benchmarks/gpu_session.sh: error: $*" >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case $1 in
    -h | --help)
        sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    --pack)
        PACK=1
        shift
        ;;
    --device | --out | --size | --scratch | --budget | --steps | --wheels)
        [ $# -ge 2 ] || die "$1 needs a value"
        case $1 in
        --device) DEVICE=$2 ;;
        --out) OUT_DIR=$2 ;;
        --size) SIZE=$2 ;;
        --scratch) SCRATCH_ARG=$2 ;;
        --budget) BUDGET=$2 ;;
        --steps) ASKED=$2 ;;
        --wheels) WHEELS=$2 ;;
        esac
        shift 2
        ;;
    *) die "unknown argument $1 (see --help)" ;;
    esac
done

case $DEVICE in
cuda)
    SIZE=${SIZE:-4GiB}
    BUDGET=${BUDGET:-540}
    QUICK=""
    EXTRA_DISK_GIB=8 # measure's 2GiB checkpoint twice, and its 2.2 GB reference model
    ;;
cpu)
    SIZE=${SIZE:-256MiB}
    BUDGET=${BUDGET:-300}
    QUICK=1
    EXTRA_DISK_GIB=1
    ;;
*) die "--device must be cuda or cpu, not '$DEVICE'" ;;
esac
[[ $SIZE =~ ^[0-9]+(\.[0-9]+)?[KMGT]i?B$ ]] || die "--size '$SIZE' is not a size such as 4GiB"
[[ $BUDGET =~ ^[1-9][0-9]*$ ]] || die "--budget '$BUDGET' is not a positive number of seconds"
[[ $ASKED =~ ^[a-z-]+(,[a-z-]+)*$ ]] ||
    die "--steps $(printf %q "$ASKED") is not a list of steps such as cuda-tests,tiers (commas, no spaces)"
IFS=, read -ra asked_steps <<<"$ASKED"
for name in "${asked_steps[@]}"; do
    case $name in
    cuda-tests | tiers | measure | loader) ;;
    *) die "--steps: unknown step '$name' (expected some of cuda-tests,tiers,measure,loader)" ;;
    esac
done
if [ -n "$WHEELS" ]; then
    [ -d "$WHEELS" ] || die "--wheels $WHEELS: no such directory"
elif [ -d "$REPO/.whl" ]; then
    WHEELS=$REPO/.whl
fi
if [ -n "$WHEELS" ]; then
    WHEELS=$(cd -- "$WHEELS" && pwd)
    compgen -G "$WHEELS/*.whl" >/dev/null || die "--wheels $WHEELS: no .whl file in it"
fi
if [ -n "$SCRATCH_ARG" ]; then
    [ -d "$SCRATCH_ARG" ] || die "--scratch $SCRATCH_ARG: no such directory"
    SCRATCH_ARG=$(cd -- "$SCRATCH_ARG" && pwd)
fi
[ -n "$OUT_DIR" ] || die "no --out given and \$OUT is not set"
mkdir -p -- "$OUT_DIR" 2>/dev/null || die "--out $OUT_DIR: cannot create it"
OUT_DIR=$(cd -- "$OUT_DIR" && pwd)
[ -w "$OUT_DIR" ] || die "--out $OUT_DIR: not writable"

cd "$REPO" || die "$REPO: cannot enter the repository"
STATE=$(mktemp -d) || die "cannot create a temporary directory"
# The repository, then the wheels setup installs (if any), then what the caller set.
export PYTHONPATH=$REPO${WHEELS:+:$STATE/site}${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
SCRATCH=""
trap 'rm -rf -- "$STATE" ${SCRATCH:+"$SCRATCH"}' EXIT
trap 'exit 143' TERM INT
SUMMARY=$OUT_DIR/summary.txt
DEADLINE=$((SECONDS + BUDGET))
OK=0
RAN=0

# --- what the steps run (exported: each step runs in a child shell under `timeout`) ---

# The requirements the steps import, checked by importing them; on cuda, a GPU as well.
check_python() {
    timeout 120 "$1" - "$DEVICE" <<'EOF'
import sys

import calibration.measure.command  # noqa: F401  (torch, safetensors, the profile schema)
import hypothesis  # noqa: F401
import pytest  # noqa: F401
import sim.engine.simulator  # noqa: F401  (the tests' conftest builds clusters)
import torch

if sys.argv[1] == "cuda" and not torch.cuda.is_available():
    sys.exit(f"torch {torch.__version__} (CUDA build {torch.version.cuda}) sees no GPU")
print(f"ok: torch {torch.__version__}")
EOF
}

# Each step may leave a note for its line of the summary in $STATE/<step>.note.
failed() {
    echo "INSTALL FAILED: $1"
    echo "install failed: $1" >"$STATE/setup.note"
}

setup() {
    local candidate
    if [ -n "$WHEELS" ]; then
        echo "== installing the wheels in $WHEELS into $STATE/site (on PYTHONPATH)"
        if ! python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
            --target "$STATE/site" "$WHEELS"/*.whl; then
            failed "the wheels in $WHEELS did not install (see above)"
            return 1
        fi
    fi
    for candidate in "$REPO/.venv/bin/python" "$REPO/.venv-gpu/bin/python" "$(command -v python3)"; do
        [ -x "$candidate" ] || continue
        echo "== trying $candidate"
        if check_python "$candidate"; then
            echo "$candidate" >"$STATE/python"
            echo "python: $candidate" >"$STATE/setup.note"
            return 0
        fi
    done
    echo "== no interpreter has the requirements: pip install -e .[test,calibration] into .venv-gpu"
    if ! python3 -m venv --system-site-packages .venv-gpu; then
        failed "python3 -m venv did not work (is the venv module installed?)"
        return 1
    fi
    if ! .venv-gpu/bin/pip install --retries 1 --timeout 20 -e ".[test,calibration]"; then
        failed "pip could not install the requirements (no package index here?)"
        return 1
    fi
    if ! check_python "$REPO/.venv-gpu/bin/python"; then
        failed "the installed requirements do not import (see above)"
        return 1
    fi
    echo "$REPO/.venv-gpu/bin/python" >"$STATE/python"
    echo "python: $REPO/.venv-gpu/bin/python (installed)" >"$STATE/setup.note"
}

# The first candidate directory where O_DIRECT works and the session's files fit, as
# `python -m calibration.measure` itself insists; else the first that exists.
choose_scratch() {
    timeout 120 "$PY" - "$SIZE" "$EXTRA_DISK_GIB" "$@" <<'EOF'
import shutil
import sys
import tempfile
from pathlib import Path

from calibration.measure.storage_probe import NotADisk, require_a_disk
from thaw_kernel.units import parse_size

size, extra, *bases = sys.argv[1:]
need = 3 * parse_size(size) + int(extra) * 2**30  # the loader writes three formats
refused = []
for base in bases:
    try:
        directory = Path(tempfile.mkdtemp(prefix="thaw-gpu-session-", dir=base))
    except OSError as err:
        print(f"{base}: {err.strerror}", file=sys.stderr)
        continue
    free = shutil.disk_usage(directory).free
    try:
        require_a_disk(directory)
    except NotADisk as err:
        print(f"{base}: {err}", file=sys.stderr)
    else:
        if free >= need:
            fits = True
            break
        print(f"{base}: {free / 2**30:.1f} GiB free, {need / 2**30:.1f} needed", file=sys.stderr)
    refused.append(directory)
else:
    if not refused:
        sys.exit("no candidate directory can be written")
    fits = False
    directory = refused.pop(0)
    print(f"none fits: using {directory} anyway", file=sys.stderr)
for other in refused:
    other.rmdir()
print(directory)
sys.exit(0 if fits else 1)
EOF
}

environment() {
    echo "== host"
    uname -a
    echo "cpus: $(nproc)"
    free -g
    df -h /dev/shm
    echo "== nvidia-smi"
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi
        nvidia-smi --format=csv --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current
    else
        echo "nvidia-smi: not on PATH"
    fi
    echo "== python and torch"
    "$PY" - <<'EOF'
import sys

import torch

print(f"python {sys.version.split()[0]} at {sys.executable}")
print(f"torch {torch.__version__}, CUDA build {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}")
print(f"torch.cuda.is_available(): {torch.cuda.is_available()}")
for index in range(torch.cuda.device_count()):
    p = torch.cuda.get_device_properties(index)
    print(f"cuda:{index}: {p.name}, {p.total_memory / 2**30:.0f} GiB, "
          f"capability {p.major}.{p.minor}, {p.multi_processor_count} SMs")
EOF
    local python_ok=$?
    echo "PYTHONPATH: $PYTHONPATH"
    if [ -n "$WHEELS" ]; then
        echo "== what the wheels installed, imported"
        "$PY" - "$STATE/site" <<'EOF' || python_ok=1
import importlib
import sys
from pathlib import Path

for entry in sorted(Path(sys.argv[1]).iterdir()):
    if entry.suffix in (".dist-info", ".data") or entry.name.startswith(("_", ".")):
        continue
    if entry.name == "bin" or (entry.is_file() and entry.suffix != ".py"):
        continue
    name = entry.name.removesuffix(".py")
    print(f"{name}: {importlib.import_module(name).__file__}")
EOF
    fi
    echo "== scratch"
    local bases=("$SCRATCH_ARG")
    [ -n "$SCRATCH_ARG" ] || bases=(/var/tmp "$REPO" "${TMPDIR:-/tmp}")
    choose_scratch "${bases[@]}" >"$STATE/scratch"
    local scratch_ok=$?
    if [ -s "$STATE/scratch" ]; then
        echo "scratch: $(cat "$STATE/scratch")" | tee "$STATE/env.note"
        df -hT "$(cat "$STATE/scratch")"
    fi
    [ $python_ok -eq 0 ] && [ $scratch_ok -eq 0 ]
}

cuda_tests() {
    local files
    mapfile -t files < <(grep -rl --include="test_*.py" "pytest.mark.cuda" tests)
    [ ${#files[@]} -gt 0 ] || { echo "no test file marks a test cuda"; return 1; }
    "$PY" -m pytest -m cuda -rs -p no:cacheprovider --junitxml="$OUT_DIR/cuda-tests.xml" \
        --basetemp "$SCRATCH/pytest" "${files[@]}"
}

loader() {
    "$PY" benchmarks/loader.py --device "$DEVICE" --size "$SIZE" --dir "$SCRATCH" \
        --runs "$LOADER_RUNS" --json >"$OUT_DIR/loader.json.part" &&
        mv "$OUT_DIR/loader.json.part" "$OUT_DIR/loader.json"
}

measure() {
    "$PY" -m calibration.measure --device "$DEVICE" --dir "$SCRATCH" ${QUICK:+--quick} \
        --out "$OUT_DIR/profile-$PROFILE_NAME.json" \
        --description "A session of benchmarks/gpu_session.sh."
}

tiers() {
    "$PY" -m calibration.validate --scenario tiers --quick --policies startup-aware \
        --dir "$SCRATCH" --out "$OUT_DIR/tiers"
}

export -f check_python failed setup choose_scratch environment cuda_tests loader measure tiers
export DEVICE SIZE OUT_DIR REPO STATE SCRATCH_ARG EXTRA_DISK_GIB LOADER_RUNS QUICK WHEELS

# --- running and recording the steps ---

record() { # step, status, wall seconds, output
    printf '%-11s %-16s %7s  %s\n' "$1" "$2" "$3" "$4" >>"$SUMMARY"
    echo "gpu_session: $1: $2 ($3 s) $4" >&2
}

# Whether --steps asks for step NAME (setup and env always run: the others need them).
asked() {
    [[ $1 == setup || $1 == env || ",$ASKED," == *",$1,"* ]]
}

# Whether step NAME ran and ended ok (`step` lists those in $STATE/ok).
ran_ok() {
    grep -qx "$1" "$STATE/ok" 2>/dev/null
}

# `step NAME CAP LOG FUNCTION [OUTPUT...]`: run FUNCTION under the smaller of CAP and the
# budget left, its output into LOG under --out; record how it ended. With --pack, LOG and
# the OUTPUTs it made (under --out) then go into NAME.tgz there.
step() {
    local name=$1 cap=$2 log=$3 function=$4
    local outputs=("${@:5}")
    if ! asked "$name"; then
        record "$name" skipped - "not in --steps"
        return
    fi
    local left=$((DEADLINE - SECONDS - RESERVE_S))
    RAN=$((RAN + 1))
    if [ $left -lt 10 ]; then
        record "$name" skipped - "under 10 s of the ${BUDGET} s budget left"
        return
    fi
    local limit=$((cap < left ? cap : left)) began
    began=$(date +%s.%N)
    timeout --kill-after=10 "$limit" bash -c "$function" >"$OUT_DIR/$log" 2>&1
    local rc=$? status wall
    rm -f -- "$OUT_DIR"/*.part # what a failed or stopped step was writing
    wall=$(awk -v a="$began" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    case $rc in
    0) status=ok OK=$((OK + 1)) && echo "$name" >>"$STATE/ok" ;;
    124 | 137) status="timeout(${limit}s)" ;;
    *) status="failed(rc=$rc)" ;;
    esac
    if [ $rc -ne 0 ]; then
        tail -n 15 "$OUT_DIR/$log" | sed "s/^/  $name| /" >&2
    fi
    [ -n "$PACK" ] && pack "$name" "$log" "${outputs[@]}" && log=$name.tgz
    record "$name" "$status" "$wall" "$log$(sed 's/^/  (/; s/$/)/' "$STATE/$name.note" 2>/dev/null)"
}

# `pack NAME FILE...`: the FILEs (and folders) under --out that exist, into NAME.tgz there.
pack() {
    local name=$1 file present=()
    for file in "${@:2}"; do
        [ -e "$OUT_DIR/$file" ] && present+=("$file")
    done
    tar czf "$OUT_DIR/$name.tgz.part" -C "$OUT_DIR" "${present[@]}" &&
        mv "$OUT_DIR/$name.tgz.part" "$OUT_DIR/$name.tgz" &&
        (cd "$OUT_DIR" && rm -rf -- "${present[@]}")
}

{
    echo "thaw GPU session: benchmarks/gpu_session.sh --device $DEVICE --size $SIZE" \
        "--steps $ASKED (budget $BUDGET s), $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(uname -n)"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo 'unknown (no git here)')"
    if command -v nvidia-smi >/dev/null; then
        echo "gpu: $(nvidia-smi --format=csv,noheader --query-gpu=name,driver_version,memory.total 2>&1 | head -n 1)"
    else
        echo "gpu: none (nvidia-smi is not on PATH)"
    fi
    printf '%-11s %-16s %7s  %s\n' step status wall_s output
} >"$SUMMARY"

step setup 240 setup.log setup
PY=$(cat "$STATE/python" 2>/dev/null || command -v python3 || echo python3)
export PY

step env 120 env.txt environment
SCRATCH=$(cat "$STATE/scratch" 2>/dev/null)
SCRATCH=${SCRATCH:-$(mktemp -d /var/tmp/thaw-gpu-session-XXXXXX)}
export SCRATCH

PROFILE_NAME=cpu
if [ "$DEVICE" = cuda ]; then
    PROFILE_NAME=$(timeout 120 "$PY" -c 'import torch; print(torch.cuda.get_device_name(0))' \
        2>/dev/null | tr '[:upper:]' '[:lower:]' | tr -cs 'a-z0-9' '-' | sed 's/^-*//; s/-*$//')
    PROFILE_NAME=${PROFILE_NAME:-unknown-gpu}
fi
export PROFILE_NAME

step cuda-tests 150 cuda-tests.log cuda_tests cuda-tests.xml
if [ "$DEVICE" = cuda ]; then
    step tiers 500 tiers.log tiers tiers
else
    record tiers skipped - "on cuda only (on the CPU it is python -m calibration.validate)"
fi
step measure 300 measure.log measure "profile-$PROFILE_NAME.json"
# Covered by what ran ok of measure's migration probe and the CUDA tests.
if ran_ok measure && ran_ok cuda-tests; then
    record migration covered - "by measure's migration probe and cuda-tests"
elif ran_ok measure || ran_ok cuda-tests; then
    record migration covered - "by $(ran_ok measure && echo "measure's migration probe" || echo cuda-tests) alone"
else
    record migration skipped - "neither measure nor cuda-tests ran ok"
fi
step loader 240 loader.log loader loader.json

echo "total: $OK of $RAN steps ok in $((SECONDS)) s" >>"$SUMMARY"
cat "$SUMMARY"
[ $OK -eq $RAN ]
