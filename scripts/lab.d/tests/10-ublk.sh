# vecio ublk against the kernel's ublk driver: the device's limits, fio verify on the raw
# device, discard and write-zeroes, ext4 with fsx on it, a read-only device, and a server
# killed with SIGKILL mid-write then resumed with --recover: no acknowledged write lost.
. /lab/lib.sh
need_module ublk_drv
[ -e /dev/ublk-control ] || skip "no /dev/ublk-control"

img=/scratch/ublk.img
size=$((256 * 1048576)); [ "$LAB_FULL" = 1 ] && size=$((1024 * 1048576))
rm -f $img; truncate -s $size $img

log "1. a two-queue device over a direct file"
start_ublk $img --queues 2 --depth 64
dev=$UBLK_DEV; b=$(basename $dev)
lbs=$(cat /sys/block/$b/queue/logical_block_size)
[ "$(blockdev --getsize64 $dev)" = $size ] || fail "size $(blockdev --getsize64 $dev), want $size"
[ "$(cat /sys/block/$b/queue/write_cache)" = "write back" ] || fail "no volatile write cache: FLUSH would never come"
[ "$(cat /sys/block/$b/queue/fua)" = 1 ] || fail "no FUA"
[ "$(cat /sys/block/$b/queue/discard_granularity)" -gt 0 ] || fail "no discard"
[ "$(ls /sys/block/$b/mq | wc -l)" = 2 ] || fail "want 2 hardware queues"
log "   $dev: $size bytes, $lbs-byte logical blocks, write back, FUA, discard"
vecio ublk list | grep -q "^${dev#/dev/ublkb} .*live.*$img" || { vecio ublk list; fail "list does not show $dev"; }

log "2. fio verify (crc32c, 4 jobs) on the raw device"
T=300 run_fio_verify $dev

log "3. discard and write-zeroes read back as zeros, the bytes beside them kept"
dd if=/dev/urandom of=/tmp/pat bs=1M count=4 2>/dev/null
dd if=/tmp/pat of=$dev bs=1M oflag=direct 2>/dev/null || fail "pattern write"
blkdiscard -o 1048576 -l 1048576 $dev || fail "blkdiscard"
blkdiscard -z -o 2097152 -l 1048576 $dev || fail "blkdiscard -z (write zeroes)"
dd if=/dev/zero of=/tmp/expect bs=1M count=4 2>/dev/null
dd if=/tmp/pat of=/tmp/expect bs=1M count=1 conv=notrunc 2>/dev/null
dd if=/tmp/pat of=/tmp/expect bs=1M skip=3 seek=3 count=1 conv=notrunc 2>/dev/null
dd if=$dev of=/tmp/back bs=1M count=4 iflag=direct 2>/dev/null
cmp /tmp/expect /tmp/back || fail "discarded or zeroed ranges do not read back as zeros"

log "4. ext4 on the device: mkfs, mount, fsx ($FSX_OPS ops), umount, fsck"
T=120 bounded mkfs.ext4 -q -F $dev || fail "mkfs.ext4"
mkdir -p /mnt/ublk
mount -t ext4 -o discard $dev /mnt/ublk || fail "mount"
T=600 run_fsx /mnt/ublk/fsx.file
dd if=/tmp/pat of=/mnt/ublk/pat bs=1M 2>/dev/null && sync
umount /mnt/ublk || fail "umount"
T=120 bounded fsck.ext4 -fn $dev > /tmp/fsck.out 2>&1 || { cat /tmp/fsck.out; fail "fsck after fsx"; }
stop_ublk

log "5. the file holds the file system: served again, read-only, it mounts and reads back"
start_ublk $img --read-only
[ "$(cat /sys/block/$(basename $UBLK_DEV)/ro)" = 1 ] || fail "not read-only"
dd if=/dev/zero of=$UBLK_DEV bs=4k count=1 oflag=direct 2>/dev/null && fail "a write to a read-only device succeeded"
mount -t ext4 -o ro,noload $UBLK_DEV /mnt/ublk || fail "read-only mount"
cmp /tmp/pat /mnt/ublk/pat || fail "the file written before does not read back"
umount /mnt/ublk
stop_ublk

log "6. SIGKILL of the server mid-write, then --recover: every write lands"
start_ublk $img
id=${UBLK_DEV#/dev/ublkb}
n=16; [ "$LAB_FULL" = 1 ] && n=128
dd if=/dev/urandom of=/scratch/pat bs=1M count=$n 2>/dev/null
dd if=/scratch/pat of=$UBLK_DEV bs=64k oflag=direct conv=fsync 2>/tmp/dd.err &
writer=$!
sleep 1
kill -9 $UBLK_PID; wait $UBLK_PID 2>/dev/null
kill -0 $writer 2>/dev/null || log "   (the writer had finished before the kill)"
# The driver notices the dead server when its ring and device file are released (or by its
# periodic check on older kernels): give it up to 15 s.
i=0
while state=$(vecio ublk list | awk -v id=$id '$1 == id {print $2}') && [ "$state" != quiesced ]; do
  i=$((i + 1)); [ $i -ge 30 ] && fail "device $id is '$state' 15 s after SIGKILL, want quiesced"
  sleep 0.5
done
log "   server killed; device $id is $state"
start_ublk $img --recover $id
[ "$UBLK_DEV" = /dev/ublkb$id ] || fail "recovered $UBLK_DEV, want /dev/ublkb$id"
wait_pid $writer 120 || { cat /tmp/dd.err; fail "the write across the kill failed"; }
dd if=$UBLK_DEV of=/scratch/back bs=1M count=$n iflag=direct 2>/dev/null
cmp -s /scratch/pat /scratch/back || {
  log "   64 KiB chunks that differ (chunk: bytes):"
  cmp -l /scratch/pat /scratch/back | awk '{print int(($1 - 1) / 65536)}' | uniq -c | head -20
  fail "the device does not hold what was written across the kill"
}
stop_ublk
[ "$(sum_of $img $((n * 1048576)))" = "$(sha256sum < /scratch/pat | cut -d' ' -f1)" ] \
  || fail "the backing file does not hold what was written across the kill"

log "7. vecio ublk del N stops a served device; the server exits 0"
start_ublk $img
vecio ublk del ${UBLK_DEV#/dev/ublkb} || fail "del"
wait_pid $UBLK_PID 30 || fail "the server exited $? after del"
[ -z "$(vecio ublk list | sed 1d)" ] || { vecio ublk list; fail "devices left behind"; }
rm -f $img /scratch/pat /scratch/back
log "ublk: all passed"
