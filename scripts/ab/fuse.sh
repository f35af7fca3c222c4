#!/bin/bash
# A/B of two vecio builds as FUSE servers: fio (libaio, O_DIRECT) 1 MiB random reads and writes at
# depth 4 for 5 s through a vecio fuse mount of ./src on ./mnt (src/f: a 1 GiB file); prints per
# run: build, pattern, MiB/s, server CPU ticks (1/100 s) and server CPU per MiB. Needs root.
# usage: scripts/ab/fuse.sh OLD_VECIO NEW_VECIO [ROUNDS]
set -u
OLD=$1; NEW=$2; ROUNDS=${3:-3}
one() {
  BIN=$1; RW=$2
  $BIN fuse src mnt >/dev/null 2>&1 &
  pid=$!
  for i in $(seq 50); do mountpoint -q mnt && break; sleep 0.05; done
  t0=$(awk '{print $14+$15}' /proc/$pid/stat)
  fio --name=r --filename=mnt/f --ioengine=libaio --direct=1 --rw=$RW --bs=1M --iodepth=4 --size=1g --runtime=5 --time_based --output-format=json --output=o.json >/dev/null 2>&1
  t1=$(awk '{print $14+$15}' /proc/$pid/stat)
  mbs=$(python3 -c "import json; j=json.load(open('o.json'))['jobs'][0]; print(round((j['read']['bw']+j['write']['bw'])/1024))")
  umount mnt; wait $pid 2>/dev/null
  echo "$3 $RW $mbs $((t1-t0)) $(python3 -c "print(round(($t1-$t0)*10000/($mbs*5),1))")us/MiB"
}
for r in $(seq $ROUNDS); do
  for rw in randread randwrite; do
    one $OLD $rw old; one $NEW $rw new
  done
done
