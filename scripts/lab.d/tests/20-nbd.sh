# vecio nbd through the kernel's NBD client (nbd-client): fio verify on the device, ext4 with
# fsx on it, a disconnect under load (the load fails, nothing hangs, the server lives) and a
# reconnect that serves the same bytes.
. /lab/lib.sh
need_module nbd
need_tool nbd-client
[ -e /dev/nbd0 ] || skip "no /dev/nbd0"

img=/scratch/nbd.img
size=$((256 * 1048576)); [ "$LAB_FULL" = 1 ] && size=$((1024 * 1048576))
rm -f $img; truncate -s $size $img
sock=/tmp/vecio-nbd.sock

log "1. vecio nbd over a direct file, the kernel's client on /dev/nbd0"
start_nbd $img -U $sock
nbd_connect $sock 0
[ "$(blockdev --getsize64 /dev/nbd0)" = $size ] || fail "size $(blockdev --getsize64 /dev/nbd0), want $size"

log "2. fio verify (crc32c, 4 jobs) on /dev/nbd0"
T=300 run_fio_verify /dev/nbd0

log "3. ext4 on /dev/nbd0: mkfs, mount, fsx ($FSX_OPS ops), umount, fsck"
T=120 bounded mkfs.ext4 -q -F /dev/nbd0 || fail "mkfs.ext4"
mkdir -p /mnt/nbd
mount -t ext4 /dev/nbd0 /mnt/nbd || fail "mount"
T=600 run_fsx /mnt/nbd/fsx.file
umount /mnt/nbd || fail "umount"
T=120 bounded fsck.ext4 -fn /dev/nbd0 > /tmp/fsck.out 2>&1 || { cat /tmp/fsck.out; fail "fsck after fsx"; }

log "4. disconnect under load: the load fails, nothing hangs, the server lives"
fio --name=load --filename=/dev/nbd0 --direct=1 --ioengine=psync --rw=randwrite --bs=4k \
    --numjobs=2 --time_based --runtime=60 --size=64m > /tmp/load.out 2>&1 &
load=$!
sleep 2
kill -0 $load 2>/dev/null || { cat /tmp/load.out; fail "the load ended before the disconnect"; }
nbd_disconnect 0
wait_pid $load 60 && fail "fio's load on a disconnected device succeeded"
log "   fio ended on the disconnect: $(grep -o 'err=[ 0-9]*/[^:]*' /tmp/load.out | head -n1)"
kill -0 $NBD_PID 2>/dev/null || { cat /tmp/nbd.err; fail "vecio nbd died on the disconnect"; }

log "5. reconnect: the device serves the same bytes"
dd if=/dev/urandom of=/tmp/pat bs=1M count=4 2>/dev/null
dd if=/tmp/pat of=$img bs=1M seek=100 conv=notrunc,fsync 2>/dev/null
nbd_connect $sock 0
dd if=/dev/nbd0 of=/tmp/back bs=1M skip=100 count=4 iflag=direct 2>/dev/null
cmp /tmp/pat /tmp/back || fail "after reconnecting, /dev/nbd0 does not show the file's bytes"
dd if=/tmp/pat of=/dev/nbd0 bs=1M seek=50 oflag=direct conv=fsync 2>/dev/null || fail "write after reconnect"
nbd_disconnect 0
kill -TERM $NBD_PID
wait_pid $NBD_PID 30 || fail "vecio nbd exited $? on SIGTERM"
dd if=$img of=/tmp/back bs=1M skip=50 count=4 2>/dev/null
cmp /tmp/pat /tmp/back || fail "a write through the reconnected device is not in the file"
rm -f $img
log "nbd: all passed"
