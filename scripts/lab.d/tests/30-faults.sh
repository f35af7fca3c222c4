# Faults under the backing store: vecio ublk and vecio nbd serve a device-mapper device whose
# middle is an error target (dm-error), then a flaky one (dm-flakey, up 1 s, down 1 s). A
# failed read or write must reach the block device's user as EIO, with no hang, no crash, and
# the other requests still served.
. /lab/lib.sh
need_module dm_mod
need_module dm_flakey
need_module loop
need_tool dmsetup
[ -e /dev/mapper/control ] || skip "no /dev/mapper/control"

name=vecio-lab-faults
back=/scratch/faults.img
sectors=131072                    # 64 MiB
bad_start=32768; bad_len=4096     # 2 MiB of errors at 16 MiB
rm -f $back; truncate -s 64M $back
loopdev=$(losetup --direct-io=on --show -f $back) || fail "losetup"
cleanup() {
  dmsetup remove $name 2>/dev/null
  losetup -d $loopdev 2>/dev/null
  rm -f $back
}
trap cleanup EXIT

table_errors() {
  printf '0 %d linear %s 0\n%d %d error\n%d %d linear %s %d\n' \
    $bad_start $loopdev $bad_start $bad_len $((bad_start + bad_len)) \
    $((sectors - bad_start - bad_len)) $loopdev $((bad_start + bad_len))
}
table_errors | dmsetup create $name || fail "dmsetup create"
dmsetup mknodes $name
dm=/dev/mapper/$name

# The checks on a device $1 served from $dm by the server whose pid is $2.
check_faults() {
  local dev=$1 pid=$2 ok=0 bad=0 i
  dd if=/dev/urandom of=/tmp/pat bs=1M count=1 2>/dev/null
  T=30 bounded dd if=/tmp/pat of=$dev bs=1M seek=2 oflag=direct 2>/dev/null || fail "write to a good range"
  T=30 bounded dd if=$dev of=/dev/null bs=4k skip=$((bad_start / 8 + 8)) count=1 iflag=direct 2>/tmp/dd.err \
    && fail "a read of the error range succeeded"
  grep -q "Input/output error" /tmp/dd.err || { cat /tmp/dd.err; fail "a read of the error range did not fail with EIO"; }
  T=30 bounded dd if=/tmp/pat of=$dev bs=4k seek=$((bad_start / 8 + 8)) count=1 oflag=direct 2>/tmp/dd.err \
    && fail "a write to the error range succeeded"
  grep -q "Input/output error" /tmp/dd.err || { cat /tmp/dd.err; fail "a write to the error range did not fail with EIO"; }
  kill -0 $pid 2>/dev/null || fail "the server died on an I/O error"
  T=30 bounded dd if=$dev of=/tmp/back bs=1M skip=2 count=1 iflag=direct 2>/dev/null || fail "a good read after the errors"
  cmp /tmp/pat /tmp/back || fail "the good range does not read back after the errors"
  log "   errors reach the user as EIO; the good ranges are served"

  printf '0 %d flakey %s 0 1 1\n' $sectors $loopdev | dmsetup reload $name && dmsetup resume $name \
    || fail "dmsetup reload flakey"
  i=0
  while [ $i -lt 24 ]; do
    if T=30 bounded dd if=$dev of=/dev/null bs=4k skip=$((i * 97 % 4000)) count=1 iflag=direct 2>/dev/null; then
      ok=$((ok + 1)); else bad=$((bad + 1)); fi
    i=$((i + 1)); sleep 0.1
  done
  log "   dm-flakey: $ok reads served, $bad failed"
  [ $ok -gt 0 ] && [ $bad -gt 0 ] || fail "dm-flakey: want both served and failed reads ($ok, $bad)"
  kill -0 $pid 2>/dev/null || fail "the server died under dm-flakey"
  table_errors | dmsetup reload $name && dmsetup resume $name || fail "dmsetup reload errors"
  T=30 bounded dd if=$dev of=/tmp/back bs=1M skip=2 count=1 iflag=direct 2>/dev/null || fail "a read once the device is steady again"
  cmp /tmp/pat /tmp/back || fail "the good range changed under dm-flakey"
}

if grep -qx ublk_drv /lab/missing-modules; then
  log "1. vecio ublk: skipped, kernel $(uname -r) has no ublk_drv"
else
  log "1. vecio ublk over $dm"
  start_ublk $dm
  check_faults $UBLK_DEV $UBLK_PID
  stop_ublk
fi

log "2. vecio nbd over $dm, the kernel's NBD client on /dev/nbd1"
if [ -e /dev/nbd1 ] && command -v nbd-client >/dev/null; then
  start_nbd $dm -U /tmp/faults.sock
  nbd_connect /tmp/faults.sock 1
  check_faults /dev/nbd1 $NBD_PID
  nbd_disconnect 1
  kill -TERM $NBD_PID
  wait_pid $NBD_PID 30 || fail "vecio nbd exited $? on SIGTERM"
else
  log "   skipped: no nbd module or nbd-client"
fi
log "faults: all passed"
