# vecio bench loop --lab, in the guest: seed 001's table on real block devices over one backing
# file on the ext4 scratch disk: the kernel's loop device with --direct-io=off (the seed's
# "before") and --direct-io=on (its "after"), vecio ublk, rublk's loop target (when the image
# has rublk) and vecio nbd through the kernel's nbd-client. fio (io_uring, O_DIRECT on the
# device, LOOP_DEPTH in flight) runs 4 KiB random reads, 128 KiB sequential reads and writes
# on each, the backing file's pages dropped before each. One JSON line per fact goes to /results/loop-lab.jsonl:
#   {"kind":"setup", ...}                  the guest, the sizes, the tools' versions
#   {"kind":"device","device":K,...}       a device as it was set up (path, detail)
#   {"kind":"skipped","device":K,"reason"} a device that could not be set up
#   {"kind":"sample","device":K,"rw":..,"bs":..,"rep":..,"cached_kib_before":..,
#    "cached_kib_after":..,"ctxt_before":..,"ctxt_after":..,"fio":{fio's JSON report}}
#   {"kind":"failed","device":K,"rw":..,"bs":..,"reason":..}
# The bench prepends LOOP_RUNTIME, LOOP_SIZE_MB, LOOP_REPEAT and LOOP_DEPTH to this file.
. /lab/lib.sh

RUNTIME=${LOOP_RUNTIME:-$FIO_SECS}
SIZE_MB=${LOOP_SIZE_MB:-256}
REPEAT=${LOOP_REPEAT:-1}
DEPTH=${LOOP_DEPTH:-32}
OUT=/results/loop-lab.jsonl
img=/scratch/loop-lab.img
sock=/tmp/loop-lab-nbd.sock
RUBLK_ID=7
: > $OUT

# Text safe inside a JSON string: no quotes, backslashes or line breaks.
clean() { tr -d '"\\' | tr '\n\t' '  ' | cut -c1-400; }
cached_kib() { awk '/^Cached:/ {print $2}' /proc/meminfo; }
ctxt() { awk '/^ctxt/ {print $2}' /proc/stat; }
skipped() { printf '{"kind":"skipped","device":"%s","reason":"%s"}\n' "$1" "$(echo "$2" | clean)" >> $OUT; log "skipped $1: $2"; }
device() { printf '{"kind":"device","device":"%s","path":"%s","detail":"%s"}\n' "$1" "$2" "$(echo "$3" | clean)" >> $OUT; }

# Device setup: each sets DEV, or returns 1 with the reason in WHY (and MISSING=1 when the
# kernel lacks the driver, which is a skip rather than a failure).
need_ublk() {
  grep -qx ublk_drv /lab/missing-modules 2>/dev/null \
    && { WHY="kernel $(uname -r) has no ublk_drv"; MISSING=1; return 1; }
  [ -e /dev/ublk-control ] || { WHY="no /dev/ublk-control"; MISSING=1; return 1; }
}
up_loop() {
  DEV=$(losetup --direct-io="$1" -f --show $img 2>/tmp/losetup.err) \
    || { WHY="losetup --direct-io=$1: $(cat /tmp/losetup.err)"; return 1; }
  DETAIL="losetup --direct-io=$1; sysfs loop/dio $(cat /sys/block/${DEV#/dev/}/loop/dio)"
}
down_loop() { losetup -d "$DEV"; }

up_vecio_ublk() {
  local i=0
  : > /tmp/ublk.out
  vecio ublk $img > /tmp/ublk.out 2> /tmp/ublk.err &
  PID=$!
  while [ ! -s /tmp/ublk.out ]; do
    kill -0 $PID 2>/dev/null || { WHY="vecio ublk exited: $(cat /tmp/ublk.err)"; return 1; }
    i=$((i + 1)); [ $i -ge 300 ] && { kill -9 $PID; WHY="vecio ublk: no device in 30 s"; return 1; }
    sleep 0.1
  done
  DEV=$(head -n1 /tmp/ublk.out)
  wait_for "$DEV" 10 || { WHY="$DEV did not appear"; return 1; }
  DETAIL="vecio ublk FILE (1 queue, depth 128, 512 KiB buffers, O_DIRECT on FILE): $(cat /tmp/ublk.err)"
}
down_vecio_ublk() { kill -TERM $PID; wait_pid $PID 30; }

up_rublk() {
  command -v rublk > /dev/null || { WHY="rublk is not in the guest image"; return 1; }
  timeout -s KILL 60 rublk add loop -n $RUBLK_ID -f $img > /tmp/rublk.out 2>&1 \
    || { WHY="rublk add loop: $(tail -n 3 /tmp/rublk.out)"; return 1; }
  DEV=/dev/ublkb$RUBLK_ID
  wait_for $DEV 10 || { WHY="$DEV did not appear"; return 1; }
  DETAIL="rublk add loop -n $RUBLK_ID -f FILE (1 queue, depth 128, 512 KiB buffers, direct I/O)"
}
down_rublk() { timeout -s KILL 30 rublk del -n $RUBLK_ID > /dev/null 2>&1; }

up_vecio_nbd() {
  local i=0
  : > /tmp/nbd.out
  vecio nbd $img -U $sock > /tmp/nbd.out 2> /tmp/nbd.err &
  PID=$!
  while [ ! -s /tmp/nbd.out ]; do
    kill -0 $PID 2>/dev/null || { WHY="vecio nbd exited: $(cat /tmp/nbd.err)"; return 1; }
    i=$((i + 1)); [ $i -ge 300 ] && { kill -9 $PID; WHY="vecio nbd: not listening in 30 s"; return 1; }
    sleep 0.1
  done
  timeout -s KILL 30 nbd-client -u $sock /dev/nbd0 -b 4096 > /tmp/nbd-client.out 2>&1 \
    || { WHY="nbd-client: $(cat /tmp/nbd-client.out)"; kill -TERM $PID; return 1; }
  i=0
  while [ "$(cat /sys/block/nbd0/size)" = 0 ]; do
    i=$((i + 1)); [ $i -ge 100 ] && { WHY="/dev/nbd0 has no size"; return 1; }
    sleep 0.1
  done
  DEV=/dev/nbd0
  DETAIL="vecio nbd FILE -U SOCKET (--cache=none --aio=uring), nbd-client -u SOCKET /dev/nbd0 -b 4096 (one connection)"
}
down_vecio_nbd() { timeout -s KILL 30 nbd-client -d /dev/nbd0 > /dev/null 2>&1; kill -TERM $PID; wait_pid $PID 30; }

# One measurement of device $1 ($2) on job rw=$3 bs=$4, repetition $5: the backing file's
# pages written back and dropped (dd's nocache: posix_fadvise DONTNEED on the whole file), a
# 4 KiB fio read first so that fio and its libraries are in the page cache already (dropping
# every cache made each measurement page them in again: 32 MiB of Cached growth whatever the
# device), then Cached and the context switches read around fio.
measure() {
  local key=$1 dev=$2 rw=$3 bs=$4 rep=$5 c0 c1 x0 x1 rc
  sync; dd if=$img iflag=nocache count=0 2>/dev/null
  fio --name=warm --filename="$dev" --direct=1 --ioengine=io_uring --rw=read --bs=4k \
    --size=4k --output-format=json --output=/tmp/warm.json > /dev/null 2>&1
  c0=$(cached_kib); x0=$(ctxt)
  timeout -s KILL $((RUNTIME + 120)) fio --name="$rw-$bs" --filename="$dev" --direct=1 \
    --ioengine=io_uring --iodepth="$DEPTH" --rw="$rw" --bs="$bs" --size="${SIZE_MB}m" \
    --time_based --runtime="$RUNTIME" --output-format=json --output=/tmp/fio.json \
    > /tmp/fio.err 2>&1
  rc=$?
  x1=$(ctxt); c1=$(cached_kib)
  if [ $rc != 0 ]; then
    printf '{"kind":"failed","device":"%s","rw":"%s","bs":%s,"reason":"fio exited %s: %s"}\n' \
      "$key" "$rw" "$bs" $rc "$(tail -n 3 /tmp/fio.err | clean)" >> $OUT
    log "$key $rw $bs: fio exited $rc"
    return
  fi
  printf '{"kind":"sample","device":"%s","rw":"%s","bs":%s,"rep":%s,"cached_kib_before":%s,"cached_kib_after":%s,"ctxt_before":%s,"ctxt_after":%s,"fio":' \
    "$key" "$rw" "$bs" "$rep" "$c0" "$c1" "$x0" "$x1" >> $OUT
  tr -d '\n' < /tmp/fio.json >> $OUT
  echo '}' >> $OUT
  log "$key $rw $bs: $(grep -o '"iops" : [0-9.]*' /tmp/fio.json | awk '$3 > 0 {print $3 " IOPS"}' | head -n1)"
}

need_tool fio
printf '{"kind":"setup","kernel":"%s","cpus":%s,"mem_kib":%s,"size_mib":%s,"runtime_s":%s,"repeat":%s,"depth":%s,"fio":"%s","vecio":"%s","rublk":"%s"}\n' \
  "$(uname -r)" "$(nproc)" "$(awk '/MemTotal/ {print $2}' /proc/meminfo)" "$SIZE_MB" "$RUNTIME" \
  "$REPEAT" "$DEPTH" "$(fio --version | clean)" "$(vecio --version | clean)" \
  "$( (command -v rublk > /dev/null && rublk --version) 2>&1 | head -n1 | clean)" >> $OUT

log "backing file: $SIZE_MB MiB on the scratch ext4"
rm -f $img
dd if=/dev/zero of=$img bs=1M count="$SIZE_MB" oflag=direct 2>/dev/null || fail "writing $img"

DEVICES="loop-buffered loop-dio vecio-ublk rublk-loop vecio-nbd"
failed=0
rep=1
while [ $rep -le "$REPEAT" ]; do
  for key in $DEVICES; do
    case $key in
      loop-buffered) up() { up_loop off; }; down() { down_loop; } ;;
      loop-dio) up() { up_loop on; }; down() { down_loop; } ;;
      vecio-ublk) up() { need_ublk && up_vecio_ublk; }; down() { down_vecio_ublk; } ;;
      rublk-loop) up() { need_ublk && up_rublk; }; down() { down_rublk; } ;;
      vecio-nbd) up() { up_vecio_nbd; }; down() { down_vecio_nbd; } ;;
    esac
    WHY=""; DETAIL=""; MISSING=0
    if ! up; then
      [ $rep = 1 ] && skipped $key "$WHY"
      case $key in vecio-*) [ $MISSING = 1 ] || failed=1 ;; esac
      continue
    fi
    [ $rep = 1 ] && device $key "$DEV" "$DETAIL"
    for job in "randread 4096" "read 131072" "write 131072"; do
      # shellcheck disable=SC2086
      measure $key "$DEV" $job $rep
    done
    down || log "$key: stopping $DEV failed"
  done
  rep=$((rep + 1))
done
rm -f $img
[ $failed = 0 ] || fail "a vecio device could not be set up (see the skipped lines)"
log "loop-lab: done"
