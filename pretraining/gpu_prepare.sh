#!/usr/bin/env bash
# Prepare a device run of the GPU campaign (issue 30), here, before calling the device tool:
# .gpu/ (ignored: add '/.gpu/' to .git/info/exclude) gets the workspace's *.dist-info folders (entry points,
# so plugin discovery works from the source tree on PYTHONPATH; whole wheels would push the tree over
# the tool's 64 MiB limit) and the training states to resume (latest.json + state-*; no model export).
#   bash pretraining/gpu_prepare.sh TABFLEX_RUN_DIR ORION_RUN_DIR
# then call the device tool with carry [".gpu"] and: OUT=$OUT bash pretraining/gpu_campaign.sh T TF_STEPS OR_STEPS
set -eu
TF=$1; OR=$2
rm -rf .gpu /tmp/tabzoo-whl && mkdir -p .gpu/site .gpu/runs/tabflex-gpu .gpu/runs/orion-gpu
uv build -q --all-packages --wheel -o /tmp/tabzoo-whl
(cd .gpu/site && for w in /tmp/tabzoo-whl/*.whl; do unzip -q -o "$w" '*.dist-info/*'; done)
cp "$TF"/latest.json "$TF"/state-* .gpu/runs/tabflex-gpu/
cp "$OR"/latest.json "$OR"/state-* .gpu/runs/orion-gpu/
du -sh .gpu
