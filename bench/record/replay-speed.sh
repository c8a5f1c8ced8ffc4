#!/bin/sh
# Replay speed against `candor run` for the same calls: `dd bs=4k` reading a cached file,
# recorded with `candor audit --record`, replayed with `--timing fast --keep-cache`, and
# `candor run --tests reread --record-size 4k` on a file of the same size (sequential 4 KiB
# reads of a cached file, as dd's). On a loop ext4 made here; the two alternate in pairs,
# each under the machine's timing lock. Prints each pair's figures and ratio. Root.
# WITNESS=procfs gives both `--witness procfs` (no eBPF call counting in the replay);
# ENGINE=sync has run read with read(2), as dd does, instead of its default pread.
#   bench/record/replay-speed.sh [PAIRS] [SIZE_MIB]   (defaults 5, 128)
set -eu
pairs=${1:-5}
witness=${WITNESS:-auto}
engine=${ENGINE:+--engine $ENGINE}
mib=${2:-128}
candor=${CANDOR:-$(dirname "$0")/../../target/release/candor}
[ -x "$candor" ] || candor=$(dirname "$0")/../../target/debug/candor
work=$(mktemp -d /tmp/candor-replay-speed.XXXXXX)
truncate -s $((mib * 3 + 256))M "$work/img"
dev=$(losetup --find --show "$work/img")
cleanup() {
    umount "$work/mnt" 2>/dev/null || true
    losetup -d "$dev" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
mkfs.ext4 -q "$dev"
mkdir "$work/mnt"
mount "$dev" "$work/mnt"
mkdir "$work/mnt/src" "$work/mnt/replay" "$work/mnt/run"
dd if=/dev/zero of="$work/mnt/src/f" bs=1M count="$mib" status=none
cat "$work/mnt/src/f" > /dev/null
"$candor" audit --quiet --record "$work/dd.trace" --record-dir "$work/mnt/src" -- \
    dd if="$work/mnt/src/f" of=/dev/null bs=4k 2>&1 | grep -E 'recorded|copied'
rm -f "$work/mnt/src/f"
mbps() { python3 -c "import json,sys; print('%.1f' % (json.load(open(sys.argv[1]))['results'][0]['throughput']['mean'] / 1e6))" "$1"; }
for p in $(seq "$pairs"); do
    flock /tmp/candor-heavy.lock "$candor" run "$work/mnt/run" --tests reread --record-size 4k \
        --file-size "${mib}m" --repeat 3 --witness "$witness" $engine --quiet --format json -o "$work/run.json" > /dev/null
    flock /tmp/candor-heavy.lock "$candor" replay "$work/dd.trace" "$work/mnt/replay" \
        --timing fast --keep-cache --repeat 3 --witness "$witness" --quiet --format json -o "$work/replay.json" > /dev/null
    run=$(mbps "$work/run.json")
    rep=$(mbps "$work/replay.json")
    echo "pair $p run_MBps $run replay_MBps $rep ratio $(python3 -c "print('%.3f' % ($rep / $run))")  load $(cut -d' ' -f1 /proc/loadavg)"
done
