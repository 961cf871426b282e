#!/bin/sh
# Installs what is missing, regenerates generated/, builds libkg with every
# backend whose compiler is present, and runs the demo.
set -e
cd "$(dirname "$0")"
./tools/install-deps.sh
make gen
make -j"$(nproc 2>/dev/null || echo 2)" lib
make demo
