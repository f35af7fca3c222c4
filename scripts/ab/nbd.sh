#!/bin/bash
# A/B of two vecio builds as NBD servers: fio (nbd engine) random reads at depth 32 for 5 s,
# 4 KiB and 128 KiB, the builds alternating; prints per run: build, block size, IOPS, server CPU
# ticks (1/100 s) and server CPU per request. Run in a directory holding a 1 GiB file named img.
# usage: scripts/ab/nbd.sh OLD_VECIO NEW_VECIO [ROUNDS]
set -u
OLD=$1; NEW=$2; ROUNDS=${3:-3}
one() {
  BIN=$1; BS=$2
  rm -f s.sock
  $BIN nbd img -U s.sock --cache=none --aio=uring >/dev/null 2>&1 &
  pid=$!
  for i in $(seq 50); do [ -S s.sock ] && break; sleep 0.05; done
  t0=$(awk '{print $14+$15}' /proc/$pid/stat)
  fio --name=r --ioengine=nbd --uri="nbd+unix:///?socket=$PWD/s.sock" --rw=randread --bs=$BS --iodepth=32 --size=1g --runtime=5 --time_based --output-format=json --output=o.json >/dev/null 2>&1
  iops=$(python3 -c "import json; print(round(json.load(open('o.json'))['jobs'][0]['read']['iops']))")
  t1=$(awk '{print $14+$15}' /proc/$pid/stat)
  kill -INT $pid; wait $pid 2>/dev/null
  echo "$3 $BS $iops $((t1-t0)) $(python3 -c "print(round(($t1-$t0)*10000/($iops*5),2))")us/io"
}
for r in $(seq $ROUNDS); do
  for bs in 4k 128k; do
    one $OLD $bs old; one $NEW $bs new
  done
done
