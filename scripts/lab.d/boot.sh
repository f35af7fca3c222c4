# Boots one guest under qemu (TCG; KVM fails for nested guests on the project's machines) and
# brings back its console log, results and exit status. Sourced by scripts/lab.

# Boots kernel series $1 with the image build_image made; its results go to $OUT/$1. Returns
# the guest's status: 0 when every script passed, 1 otherwise (a guest killed by the time limit
# or dead without a status line included).
boot_guest() {
  local series="$1" dir="$WORK/$1" kdir="$CACHE/kernel/$1"
  local out="$OUT/$series"
  rm -rf "$out" && mkdir -p "$out"
  rm -f "$dir/scratch.img" "$dir/results.img"
  truncate -s "$SCRATCH_SIZE" "$dir/scratch.img"
  mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1 -d "$dir/payload" "$dir/scratch.img"
  truncate -s 256M "$dir/results.img"
  # One host thread runs both vCPUs (thread=single): on a loaded host, multi-threaded TCG
  # lets one vCPU go unscheduled or miss its timer for minutes while the other waits on it
  # (RCU stalls, a mount blocked at boot); with one thread they advance together.
  local accel=tcg cpu=max ACCEL_OPTS="${VECIO_LAB_TCG:-,thread=single}"
  [ "${VECIO_LAB_KVM:-0}" = 1 ] && [ -w /dev/kvm ] && { accel=kvm; cpu=host; ACCEL_OPTS=""; }
  echo "lab: booting $(cat "$kdir/version") under qemu ($accel), time limit ${TIMEOUT}s"
  local start=$SECONDS rc=0
  timeout -k 10 "$TIMEOUT" qemu-system-x86_64 -accel "$accel$ACCEL_OPTS" -cpu "$cpu" -smp 2 -m 2048 \
    -nographic -no-reboot -nodefaults -serial stdio \
    -kernel "$kdir/vmlinuz" -initrd "$dir/initramfs.cpio" \
    -append "console=ttyS0 rdinit=/init panic=-1 loglevel=4 mitigations=off" \
    -drive "file=$dir/scratch.img,format=raw,if=virtio,cache=unsafe" \
    -drive "file=$dir/results.img,format=raw,if=virtio,cache=unsafe" \
    < /dev/null 2>&1 | sed -u 's/\r//g' | tee "$out/console.log" | sed -u "s/^/[$series] /" \
    || true
  local secs=$((SECONDS - start))
  tar -xf "$dir/results.img" -C "$out" 2>/dev/null || true
  local status
  status="$(sed -n 's/^VECIO-LAB-STATUS \([0-9]*\).*/\1/p' "$out/console.log" | tail -n1)"
  if [ -z "$status" ]; then
    echo "lab: $series: FAIL: the guest gave no status in ${secs}s (hung, crashed or killed at the ${TIMEOUT}s limit); see $out/console.log"
    rc=1
  elif [ "$status" != 0 ]; then
    echo "lab: $series: FAIL: a guest script failed (${secs}s); logs in $out"
    rc=1
  else
    echo "lab: $series: all guest scripts passed or skipped in ${secs}s"
  fi
  echo "$secs" > "$out/seconds"
  rm -f "$dir/scratch.img" "$dir/results.img"
  return $rc
}
