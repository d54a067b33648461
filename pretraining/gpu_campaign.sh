#!/usr/bin/env bash
# GPU campaign (issue 30): time the GPU kernels, then continue pretraining TabFlex (from tabflex-icl,
# longer contexts, bf16) and ORION-MSP (resumed from pretraining/orion-msp) side by side on one GPU,
# each cut by a wall-clock budget; everything worth keeping is copied to $OUT.
#   OUT=dir bash pretraining/gpu_campaign.sh TRAIN_SECONDS TABFLEX_STEPS ORION_STEPS [KERNEL_SECONDS]
# On the device machine the workspace wheels come in .whl/ (uv build --all-packages --wheel -o .whl).
set -u
T=${1:-300}; TF_STEPS=${2:-400}; OR_STEPS=${3:-3200}; KT=${4:-170}
export PYTHONUNBUFFERED=1
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 3
  export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
fi
TZ=${TABZOO:-tabzoo}
NCPU=$(nproc)
(nvidia-smi --query-gpu=name,memory.total --format=csv; nproc; python3 -c "import torch;print(torch.__version__, torch.cuda.is_available())") > "$OUT/machine.txt" 2>&1
$TZ plugins > "$OUT/plugins.txt" 2>&1 || { cat "$OUT/plugins.txt"; exit 4; }
if python3 -c "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  timeout "$KT" python3 benchmarks/gpu_kernels.py --out "$OUT/gpu_kernels.json" > "$OUT/kernels.log" 2>&1
  echo "kernels rc=$?"
fi
mkdir -p runs && rm -rf runs/tabflex-gpu runs/orion-gpu && cp -r pretraining/orion-msp runs/orion-gpu
W1=$(( NCPU > 4 ? NCPU * 6 / 10 : 1 )); W2=$(( NCPU > 4 ? NCPU * 3 / 10 : 1 ))
timeout "$T" $TZ pretrain --model tabflex --prior icl --steps "$TF_STEPS" --out runs/tabflex-gpu \
  --config @packages/tabflex/pretrain-gpu.json --workers "$W1" --no-progress --json > "$OUT/tabflex.log" 2>&1 &
P1=$!
timeout "$T" $TZ pretrain --model orion-msp --prior icl --steps "$OR_STEPS" --out runs/orion-gpu --resume \
  --config @packages/orion-msp/pretrain-gpu.json --workers "$W2" --no-progress --json > "$OUT/orion.log" 2>&1 &
P2=$!
wait $P1; echo "tabflex rc=$?"; wait $P2; echo "orion rc=$?"
tail -n 3 "$OUT/tabflex.log" "$OUT/orion.log"
rm -f runs/*/learning_curve.png
tar -cf "$OUT/tabflex-gpu.tar" -C runs tabflex-gpu
tar -cf "$OUT/orion-gpu.tar" -C runs orion-gpu
ls -la runs/*
