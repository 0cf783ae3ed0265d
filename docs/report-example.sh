#!/bin/sh
# docs/report-example.sh — regenerate docs/report-example.html and docs/report.png:
# the bundled policies swept on two bundled traces (varlen_infer under a 600 MiB cap,
# transformer_train uncapped), the report by weighted:0.5, and the page's first screen
# in headless Chromium at 1280x900.  Run from a built source tree:
#   sh docs/report-example.sh          (needs chromium: apt-get install -y chromium)
set -eu
cd "$(dirname "$0")/.."
export PAGETUNE_POLICY_DIR="$PWD/policies" PAGETUNE_GPU_DIR="$PWD/sim/gpus"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
P="--policy pytorch_native --policy pytorch_expandable --policy cuda_async --policy direct --policy stitch"
P="$P --policy large_page_threshold --policy tunable_caching"
./pagetune trace import traces/varlen_infer.pickle.gz -o "$tmp/varlen_infer.trace.gz"
(cd "$tmp" && "$OLDPWD/pagetune" sweep --trace varlen_infer.trace.gz $P --capacity 600M >/dev/null 2>&1)
(cd "$tmp" && "$OLDPWD/pagetune" sweep --trace "$OLDPWD/traces/transformer_train.pickle.gz" $P >/dev/null 2>&1)
(cd "$tmp" && "$OLDPWD/pagetune" report --objective weighted:0.5 --html report.html >/dev/null)
cp "$tmp/report.html" docs/report-example.html
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,900 \
  --screenshot="$PWD/docs/report.png" docs/report-example.html 2>/dev/null
echo "wrote docs/report-example.html and docs/report.png"
