#!/usr/bin/env bash
# Run HERE (not on the GPU machine): prepares .deps/root with our Debian libraries for the GPU machine,
# through ../shared/tools/device-deps.sh, plus the header-only packages haargrad also needs.
# OpenBLAS is left out on purpose: on the GPU machine the CPU reference uses plain loops.
set -euo pipefail
cd "$(dirname "$0")/.."
../shared/tools/device-deps.sh nlohmann-json3-dev libcli11-dev libjpeg62-turbo-dev libjpeg62-turbo
rm -rf .deps/debs
du -sh .deps | cut -f1 | xargs echo ".deps for carry:"
