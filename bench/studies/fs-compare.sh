#!/bin/sh
# Filesystems side by side (the study of source document 002, on lab filesystems instead of
# disks): ext4, xfs and btrfs on loop devices; sequential and random, read and write; files of
# 1, 50 and 150 MiB; three repetitions, interleaved across the filesystems; mean and standard
# deviation. Needs root (candor lab). Usage: fs-compare.sh [OUTDIR] (default: ./fs-compare).
set -eu
CANDOR=${CANDOR:-candor}
OUT=${1:-fs-compare}
mkdir -p "$OUT"
LAB=$(cd "$OUT" && pwd)
"$CANDOR" lab create --fs ext4,xfs,btrfs --size 2g --dir "$LAB" >/dev/null
trap '"$CANDOR" lab destroy --dir "$LAB" >/dev/null' EXIT
# shellcheck disable=SC2046 # one argument per mount point
"$CANDOR" run $("$CANDOR" lab list --paths --dir "$LAB") \
    --tests write,read,randwrite,randread --file-size 1m,50m,150m --record-size 4k \
    --repeat 3 --quiet -o "$OUT/fs-compare.json" >"$OUT/fs-compare.txt"
"$CANDOR" compare --format markdown "$OUT/fs-compare.json" >"$OUT/fs-compare.md"
echo "$OUT/fs-compare.txt, $OUT/fs-compare.md and $OUT/fs-compare.json written"
