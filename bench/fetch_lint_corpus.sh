#!/usr/bin/env bash
# Real PyTorch code nobody on this project wrote, for the lint measurements in
# docs/lint.md: wheels from PyPI, unpacked under $1 (default /tmp/lintreal/src).
# Nothing here is committed; the measurements name these exact versions.
set -euo pipefail
dest=${1:-/tmp/lintreal/src}
wheels=$(mktemp -d)
pip download --no-deps -q -d "$wheels" \
  timm==1.0.31 lightning==2.6.6 torchmetrics==1.9.0 torchtune==0.6.1 \
  pytorch-ignite==0.5.5 d2l==1.0.3 stable-baselines3==2.9.2 skorch==1.4.0 \
  pytorch-accelerated==0.1.61 avalanche-lib==0.6.0
for wheel in "$wheels"/*.whl; do
  name=$(basename "$wheel"); name=${name%%-*}
  mkdir -p "$dest/$name" && unzip -q -o "$wheel" -d "$dest/$name"
done
find "$dest" -name '*.py' | wc -l
