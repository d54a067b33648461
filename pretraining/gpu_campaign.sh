#!/usr/bin/env bash
# GPU campaign (issue 30), run on the device machine: resume TabFlex and ORION-MSP pretraining side by
# side on one GPU from the states that pretraining/gpu_prepare.sh put in .gpu/runs, each cut by a
# wall-clock budget (a state is written every checkpoint_every steps, so a cut run resumes); the runs
# come back as tars in $OUT. Sources run from the tree (PYTHONPATH) with .gpu/site's entry points.
#   OUT=dir bash pretraining/gpu_campaign.sh TRAIN_SECONDS TABFLEX_STEPS ORION_STEPS [PYTHON]
# Kernel timings: python3 benchmarks/gpu_kernels.py --out $OUT/gpu_kernels.json (same PYTHONPATH).
set -u
T=${1:-300}; TF_STEPS=${2:-800}; OR_STEPS=${3:-3500}; PY=${4:-python3}
export PYTHONUNBUFFERED=1
R=$(pwd)
export PYTHONPATH=$R/.gpu/site:$R/packages/core/src:$R/packages/tabflex/src:$R/packages/orion-msp/src:$R/packages/priors/src:$R/packages/npt/src:$R/packages/multitab/src:$R/packages/ramba/src
NCPU=$(nproc)
(nvidia-smi --query-gpu=name,memory.total --format=csv; nproc; $PY -c "import torch;print(torch.__version__, torch.cuda.is_available())") > "$OUT/machine.txt" 2>&1
$PY -m tabzoo.cli plugins > "$OUT/plugins.txt" 2>&1 || { cat "$OUT/plugins.txt"; exit 4; }
mkdir -p runs && rm -rf runs/tabflex-gpu runs/orion-gpu && cp -r .gpu/runs/tabflex-gpu .gpu/runs/orion-gpu runs/
W1=$(( NCPU > 4 ? NCPU / 2 : 1 )); W2=$(( NCPU > 4 ? NCPU * 3 / 8 : 1 ))
timeout "$T" $PY -m tabzoo.cli pretrain --model tabflex --prior icl --steps "$TF_STEPS" --out runs/tabflex-gpu --resume \
  --config @packages/tabflex/pretrain-gpu.json --workers "$W1" --no-progress --json > "$OUT/tabflex.log" 2>&1 &
P1=$!
timeout "$T" $PY -m tabzoo.cli pretrain --model orion-msp --prior icl --steps "$OR_STEPS" --out runs/orion-gpu --resume \
  --config @packages/orion-msp/pretrain-gpu.json --workers "$W2" --no-progress --json > "$OUT/orion.log" 2>&1 &
P2=$!
wait $P1; echo "tabflex rc=$?"; wait $P2; echo "orion rc=$?"
tail -c 600 "$OUT/tabflex.log"; tail -c 600 "$OUT/orion.log"
cat runs/*/latest.json
rm -f runs/*/learning_curve.png
tar -cf "$OUT/tabflex-gpu.tar" -C runs tabflex-gpu
tar -cf "$OUT/orion-gpu.tar" -C runs orion-gpu
ls -la runs/*
