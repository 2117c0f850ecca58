#!/usr/bin/env bash
# Dev use (device tool): dev/s35a.sh (GPU tests, final figures, the configs' step) then
# dev/s35b.sh (the per-op breakdown) in one call, for a card that s35a did not run on.
# Pack: KEEP_NEW=0 dev/labbin-pack.sh. Carry ["build/labpack", ".golden"].
bash dev/s35a.sh
bash dev/s35b.sh
