#!/bin/sh
# Thread scaling with O_DIRECT and the device's efficiency (the study of source document 003):
# sequential and random reads and writes, 1 to 48 threads, records of 4 KiB, 64 KiB and 1 MiB,
# each result against a rated ceiling. Usage: thread-sweep.sh DIR [SPEC] [OUTDIR]
# DIR: a directory on the device to measure. SPEC: the device's rating, e.g.
# seq=510MB/s,iops=95000, or auto to measure it first (default: seq=2GB/s,iops=60000, what fio
# measured on the project's VMs). OUTDIR: where the results go (default: ./thread-sweep).
set -eu
CANDOR=${CANDOR:-candor}
DIR=${1:?give a directory on the device to measure}
SPEC=${2:-seq=2GB/s,iops=60000}
OUT=${3:-thread-sweep}
mkdir -p "$OUT"
"$CANDOR" run "$DIR" --tests write,read,randwrite,randread --direct \
    --threads 1,2,4,8,12,24,48 --record-size 4k,64k,1m --file-size 32m --runtime 1s \
    --device-spec "$SPEC" --quiet -o "$OUT/thread-sweep.json" >"$OUT/thread-sweep.txt"
echo "$OUT/thread-sweep.txt and $OUT/thread-sweep.json written"
