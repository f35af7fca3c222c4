# Helpers for the lab's guest scripts: . /lab/lib.sh
# A script exits 0 when it passes, 77 when it skips (saying why on its last line), anything else
# when it fails.

# Quick by default (the make test budget); LAB_FULL=1 (make lab-full) runs longer.
if [ "${LAB_FULL:-0}" = 1 ]; then
  FSX_OPS=20000; FIO_SECS=60; FIO_SIZE=256m
else
  FSX_OPS=1000; FIO_SECS=5; FIO_SIZE=32m
fi

# busybox's shell runs its own applet for a name it knows (dd, cmp, losetup, blkdiscard, ...)
# before looking at PATH: the real tools in /lab/bin are called through functions instead.
# (Only for applet names: a function runs in a subshell when put in the background, so $!
# would be the subshell's pid, not the tool's.)
_applets=" $(busybox --list | tr '\n' ' ') "
for _t in /lab/bin/*; do
  _n=${_t##*/}
  case $_n in *[!a-zA-Z0-9_]*) continue ;; esac
  case $_applets in *" $_n "*) eval "$_n() { $_t \"\$@\"; }" ;; esac
done

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
  local i=0 n=$(( ${2:-10} * 10 ))
  while [ ! -e "$1" ]; do
    i=$((i + 1)); [ $i -ge $n ] && return 1; sleep 0.1
  done
}

# Runs fsx on file $1 with the op count for this run and O_DIRECT off (the file system above a
# block device is what is under test).
run_fsx() {
  need_tool fsx
  log "fsx: $FSX_OPS ops on $1"
  timeout -s KILL "${T:-600}" fsx -q -N "$FSX_OPS" -S 7 -l 4194304 "$1" > /tmp/fsx.out 2>&1 \
    || { tail -n 30 /tmp/fsx.out; fail "fsx on $1 (exit $?; 137: hung)"; }
  tail -n 1 /tmp/fsx.out
}

# fio verify (crc32c) on $1, several jobs, $FIO_SECS seconds of writes then a full verify.
run_fio_verify() {
  need_tool fio
  log "fio verify on $1: 4 jobs, $FIO_SIZE each"
  timeout -s KILL "${T:-600}" fio --name=verify --filename="$1" --direct=1 --ioengine=psync --rw=randwrite --bs=4k,16k \
      --numjobs=4 --size="$FIO_SIZE" --offset_increment="$FIO_SIZE" --runtime="$FIO_SECS" \
      --verify=crc32c --verify_fatal=1 --do_verify=1 --group_reporting --minimal \
      > /tmp/fio.out 2>&1 || { tail -n 20 /tmp/fio.out; fail "fio verify on $1 (exit $?; 137: hung)"; }
}

# Starts `vecio ublk ARGS...` in the background; sets UBLK_PID and UBLK_DEV (/dev/ublkbN, the
# line it prints once ready). Its standard error goes to /tmp/ublk-$UBLK_PID.err.
start_ublk() {
  local i=0
  rm -f /tmp/ublk.out
  vecio ublk "$@" > /tmp/ublk.out 2> /tmp/ublk.err &
  UBLK_PID=$!
  while [ ! -s /tmp/ublk.out ]; do
    kill -0 $UBLK_PID 2>/dev/null || { cat /tmp/ublk.err; fail "vecio ublk $* exited"; }
    i=$((i + 1)); [ $i -ge 200 ] && { cat /tmp/ublk.err; fail "vecio ublk $*: no device in 20 s"; }
    sleep 0.1
  done
  UBLK_DEV="$(head -n1 /tmp/ublk.out)"
  wait_for "$UBLK_DEV" 10 || fail "$UBLK_DEV did not appear"
  log "vecio ublk $* serves $UBLK_DEV (pid $UBLK_PID)"
}

# Stops the server started by start_ublk with SIGTERM; fails unless it exits 0 within 30 s.
stop_ublk() {
  local i=0 rc
  kill -TERM "$UBLK_PID" 2>/dev/null
  while kill -0 "$UBLK_PID" 2>/dev/null; do
    i=$((i + 1)); [ $i -ge 300 ] && { kill -9 "$UBLK_PID"; fail "vecio ublk did not stop in 30 s"; }
    sleep 0.1
  done
  wait "$UBLK_PID"; rc=$?
  [ $rc = 0 ] || { tail -n 20 /tmp/ublk.err; fail "vecio ublk exited $rc"; }
}

# Runs "$@" with a time limit of $T seconds (default 60); fails naming it when killed.
bounded() {
  local rc
  timeout -s KILL "${T:-60}" "$@"; rc=$?
  [ $rc = 137 ] && fail "hung: $* (killed after ${T:-60}s)"
  return $rc
}

# Waits up to $2 seconds for process $1 to end and returns its status; fails if it is still
# running then (hung).
wait_pid() {
  local i=0
  while kill -0 "$1" 2>/dev/null; do
    i=$((i + 1)); [ $i -ge $(($2 * 10)) ] && { kill -9 "$1"; fail "hung: pid $1 still running after $2 s"; }
    sleep 0.1
  done
  wait "$1"
}

# sha256 of $2 bytes of $1 from offset 0 (direct reads of 1 MiB).
sum_of() {
  dd if="$1" bs=1M count=$(($2 / 1048576)) iflag=direct 2>/dev/null | sha256sum | cut -d' ' -f1
}

# Starts `vecio nbd ARGS...` in the background (sets NBD_PID) and waits for its ready line
# (the URI on standard output).
start_nbd() {
  local i=0
  rm -f /tmp/nbd.out
  vecio nbd "$@" > /tmp/nbd.out 2> /tmp/nbd.err &
  NBD_PID=$!
  while [ ! -s /tmp/nbd.out ]; do
    kill -0 $NBD_PID 2>/dev/null || { cat /tmp/nbd.err; fail "vecio nbd $* exited"; }
    i=$((i + 1)); [ $i -ge 200 ] && { cat /tmp/nbd.err; fail "vecio nbd $*: not listening in 20 s"; }
    sleep 0.1
  done
  log "vecio nbd $* listens: $(head -n1 /tmp/nbd.out) (pid $NBD_PID)"
}

# Connects /dev/nbd$2 to the vecio nbd Unix socket $1 with the kernel's NBD client.
nbd_connect() {
  timeout -s KILL 30 nbd-client -u "$1" "/dev/nbd$2" -b 4096 > /tmp/nbd-client.out 2>&1 \
    || { cat /tmp/nbd-client.out; fail "nbd-client could not connect /dev/nbd$2"; }
  local i=0
  while [ "$(cat /sys/block/nbd$2/size)" = 0 ]; do
    i=$((i + 1)); [ $i -ge 100 ] && fail "/dev/nbd$2 has no size after connecting"
    sleep 0.1
  done
}

nbd_disconnect() {
  timeout -s KILL 30 nbd-client -d "/dev/nbd$1" > /dev/null 2>&1 || fail "nbd-client -d /dev/nbd$1"
}
