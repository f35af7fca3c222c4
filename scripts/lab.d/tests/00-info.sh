# vecio info's kernel section names what the guest kernel has: ublk_drv loaded (with its
# features) or missing as the lab found it, nbd, loop, dm_mod and dm_flakey loaded.
. /lab/lib.sh
vecio info > /tmp/info.out || fail "vecio info exited $?"
cat /tmp/info.out
state() { awk -v m="$1" '$1 == m {print $2; exit}' /tmp/info.out; }
for m in nbd loop dm_mod dm_flakey; do
  [ "$(state $m)" = loaded ] || fail "vecio info says $m is '$(state $m)', want loaded"
done
if grep -qx ublk_drv /lab/missing-modules; then
  [ "$(state ublk_drv)" = missing ] || fail "vecio info says ublk_drv is '$(state ublk_drv)', want missing"
  grep -q "missing: ublk_drv" /tmp/info.out || fail "vecio info does not name ublk_drv as missing"
else
  [ "$(state ublk_drv)" = loaded ] || fail "vecio info says ublk_drv is '$(state ublk_drv)', want loaded"
  grep -q "features: .*USER_RECOVERY" /tmp/info.out || fail "vecio info lists no ublk USER_RECOVERY feature"
fi
log "info: the kernel section matches the guest"
