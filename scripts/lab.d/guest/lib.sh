# Helpers for the lab's guest scripts: . /lab/lib.sh
# A script exits 0 when it passes, 77 when it skips (saying why on its last line), anything else
# when it fails.

# Quick by default (the make test budget); LAB_FULL=1 (make lab-full) runs longer.
if [ "${LAB_FULL:-0}" = 1 ]; then
  FSX_OPS=20000; FIO_SECS=60; FIO_SIZE=256m
else
  FSX_OPS=1500; FIO_SECS=8; FIO_SIZE=48m
fi

log() { echo "[$(date +%T)] $*"; }
skip() { echo "skip: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

# Skips unless module $1 is loaded or built in.
need_module() {
  grep -qx "$1" /lab/missing-modules 2>/dev/null && skip "kernel $(uname -r) has no $1 module"
  return 0
}

need_tool() { command -v "$1" >/dev/null 2>&1 || skip "$1 is not in the guest image"; }

# Waits up to $2 seconds (default 10) for path $1 to exist.
wait_for() {
  i=0; n=$(( ${2:-10} * 10 ))
  while [ ! -e "$1" ]; do
    i=$((i + 1)); [ $i -ge $n ] && return 1; sleep 0.1
  done
}

# Runs fsx on file $1 with the op count for this run and O_DIRECT off (the file system above a
# block device is what is under test).
run_fsx() {
  need_tool fsx
  log "fsx: $FSX_OPS ops on $1"
  fsx -q -N "$FSX_OPS" -S 7 -l 4194304 "$1" > /tmp/fsx.out 2>&1 || { tail -n 30 /tmp/fsx.out; fail "fsx on $1"; }
  tail -n 1 /tmp/fsx.out
}

# fio verify (crc32c) on $1, several jobs, $FIO_SECS seconds of writes then a full verify.
run_fio_verify() {
  need_tool fio
  log "fio verify on $1: 4 jobs, $FIO_SIZE each"
  fio --name=verify --filename="$1" --direct=1 --ioengine=psync --rw=randwrite --bs=4k,16k \
      --numjobs=4 --size="$FIO_SIZE" --offset_increment="$FIO_SIZE" --runtime="$FIO_SECS" \
      --verify=crc32c --verify_fatal=1 --do_verify=1 --group_reporting --minimal \
      > /tmp/fio.out 2>&1 || { tail -n 20 /tmp/fio.out; fail "fio verify on $1"; }
}
