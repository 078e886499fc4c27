#!/usr/bin/env bash
# Rebuilds the demo models from Debian packages alone (no network): corpus,
# tokenizer, both trainings, GGUF export, CI fixtures. A maintainer step, not
# part of CI; needs `scripts/setup.sh --train`. About 45 minutes of training on
# an otherwise idle 2-core machine (see README.md, "Figures").
#   models/demo/build.sh            # everything
#   STAGE=export models/demo/build.sh   # only export + fixtures from out/*.pt
set -euo pipefail
cd "$(dirname "$0")"
PY=/usr/bin/python3
# Debian's reference BLAS is very slow for training; with libopenblas0-openmp
# installed (it takes over libblas.so.3), this core type is far faster here.
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-COOPERLAKE}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}  # no spinning threads on a busy machine
# Keep freed tensors in glibc's heap: with the default dynamic threshold and
# trimming, large activations go back to the kernel and every step faults
# them in again, which on this VM cost more than the arithmetic.
export MALLOC_MMAP_THRESHOLD_=${MALLOC_MMAP_THRESHOLD_:-33554432}
export MALLOC_TRIM_THRESHOLD_=${MALLOC_TRIM_THRESHOLD_:-4000000000}
THREADS=${THREADS:-2}
TARGET_STEPS=${TARGET_STEPS:-3000}
DRAFT_STEPS=${DRAFT_STEPS:-3000}
SEED=1234
STAGE=${STAGE:-all}

if [ "$STAGE" = all ]; then
    $PY corpus.py --out data
    $PY prepare.py --data data --vocab 4096
    $PY train.py --model target --steps "$TARGET_STEPS" --seed $SEED --threads "$THREADS" | tee out-target.log
    $PY train.py --model draft --steps "$DRAFT_STEPS" --seed $SEED --threads "$THREADS" | tee out-draft.log
fi
$PY export.py --ckpt out/target.pt --out demo-target-f16.gguf --name splash-demo-target
$PY export.py --ckpt out/draft.pt --out demo-draft-f16.gguf --name splash-demo-draft
$PY fixtures.py --data data --ckpt out/target.pt --out .
echo "build: done; check with ../../build/splash perplexity --model demo-target-f16.gguf --file data/val.txt"
