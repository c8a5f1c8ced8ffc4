#!/bin/sh
# The cost of `candor audit --record` on the recorded application's own figure: dbench's
# throughput and a sqlite3 transaction loop's own time (the sum of its statements' run
# times, `.timer on`), on a loop ext4 made here, each run
# plain, under `candor audit` and under `candor audit --record`, in rounds that alternate
# the three, under the machine's timing lock. Prints every figure, then medians and the
# spread. Root (loop device, eBPF).
#   bench/record/overhead.sh [ROUNDS]   (default 5)
# ONLY=dbench or ONLY=sqlite runs that one alone (the other's figure is printed as -).
set -eu
rounds=${1:-5}
candor=${CANDOR:-$(dirname "$0")/../../target/release/candor}
[ -x "$candor" ] || candor=$(dirname "$0")/../../target/debug/candor
work=$(mktemp -d /tmp/candor-record-bench.XXXXXX)
img=$work/img
truncate -s 1G "$img"
dev=$(losetup --find --show "$img")
cleanup() {
    umount "$work/mnt" 2>/dev/null || true
    losetup -d "$dev" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
mkfs.ext4 -q "$dev"
mkdir "$work/mnt"
mount "$dev" "$work/mnt"
sql=$work/loop.sql
echo "create table t(a, b);" > "$sql"
i=0
while [ $i -lt 300 ]; do
    echo "begin; insert into t values($i, 'x'); commit;" >> "$sql"
    i=$((i + 1))
done
load=/usr/share/dbench/client.txt
[ -f "$load" ] || load=/usr/share/dbench/client.txt.gz

# $1: plain, audit or record. Prints "dbench MB/s" and "sqlite seconds".
one() {
    work=${WORK:-$work}; candor=${CANDOR:-$candor}; load=${LOAD:-$load}; sql=${SQL:-$sql}; only=${ONLY:-}
    d=$work/mnt/d; rm -rf "$d"; mkdir "$d"
    case $1 in
        plain) pre="" ;;
        audit) pre="$candor audit --" ;;
        record) pre="$candor audit --record $work/t.trace --record-dir $d --" ;;
    esac
    db=- sq=-
    if [ "$only" != sqlite ]; then
        db=$($pre dbench -c "$load" -D "$d" -t 4 2 2>/dev/null | sed -n 's/^Throughput \([0-9.]*\) MB\/sec.*/\1/p')
        rm -rf "$d"; mkdir "$d"
    fi
    # sqlite3's own figure: the sum of its statements' "Run Time: real" (.timer on).
    if [ "$only" != dbench ]; then
        sq=$( (echo ".timer on"; cat "$sql") | $pre sqlite3 "$d/t.db" 2>/dev/null | awk '/^Run Time: real/ {s += $4} END {printf "%.4f", s}')
    fi
    echo "$db $sq"
}

# Each run holds the timing lock; the three modes alternate within every round.
for r in $(seq "$rounds"); do
    for mode in plain audit record; do
        out=$(flock /tmp/candor-heavy.lock env WORK="$work" CANDOR="$candor" LOAD="$load" SQL="$sql" ONLY="${ONLY:-}" MODE=$mode sh -c "$(sed -n '/^one() {/,/^}/p' "$0"); one \$MODE")
        echo "round $r $mode dbench_MBps ${out% *} sqlite_s ${out#* }"
    done
done
