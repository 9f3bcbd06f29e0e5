#!/usr/bin/env bash
# Everything this project checks on a real GPU, in one run sized for a short lease (about
# 8 minutes on an H100/H200 machine with CuPy, PyTorch, nvcc and pytest-xdist installed):
#   1. the fake-CuPy suites (every test using the ``fake_cuda`` fixture) on the real CuPy
#      (BACKPLAN_REAL_CUPY=1, tests/fakecuda.py): eager ops, bf16, compiled plans with their
#      NVRTC kernels, real CUDA-graph capture (dropout's draws included), placement;
#   2. nvcc on every rendered kernel (tests/codegen/test_cuda_nvcc.py);
#   3. python -m benchmarks.gpu: every workload compiled on cuda equals CPU eager, and the
#      step times (graph, no graph, our eager, PyTorch eager).
# Logs go to $OUT (default ./gpu_out); the last lines printed are a summary.
#
#     bash benchmarks/gpu_check.sh [BENCH_SECONDS]
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu_out}"
mkdir -p "$OUT"
export OUT PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
python="${PYTHON:-python3}"

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
"$python" -c "import sys, cupy, numpy, llvmlite; print('python', sys.version.split()[0], \
'cupy', cupy.__version__, 'numpy', numpy.__version__, 'llvmlite', llvmlite.__version__)"

workers=()
"$python" -c "import xdist" 2>/dev/null && workers=(-n 8)
"$python" -c "import pytest_timeout" 2>/dev/null && workers+=(--timeout 90)
files=$(grep -rl "fake_cuda" tests --include='test_*.py' | sort)
BACKPLAN_REAL_CUPY=1 timeout 260 "$python" -m pytest -q -p no:cacheprovider "${workers[@]}" \
    -rfE --junitxml="$OUT/real_cupy.xml" $files > "$OUT/real_cupy.log" 2>&1
echo "real CuPy suites: rc=$? $(tail -1 "$OUT/real_cupy.log")"

timeout 120 "$python" -m pytest -q -p no:cacheprovider tests/codegen/test_cuda_nvcc.py \
    > "$OUT/nvcc.log" 2>&1
echo "nvcc suite: rc=$? $(tail -1 "$OUT/nvcc.log")"

timeout 240 "$python" -m benchmarks.gpu "${1:-150}" > "$OUT/gpu_bench.log" 2>&1
echo "benchmarks.gpu: rc=$?"
cat "$OUT/gpu_bench.log" | cut -c1-400
grep -E "^(FAILED|ERROR) " "$OUT/real_cupy.log" | cut -c1-300 | head -60
