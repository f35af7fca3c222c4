# The guest image, per kernel: a small initramfs (busybox, the kernel's modules the tests need,
# the guest scripts) and a payload tree (the tools with their libraries, vecio, fsx) that goes
# onto the ext4 scratch disk, where the guest reaches it through symbolic links: unpacking
# 100 MB of libraries as an initramfs costs seconds under TCG, a disk pages in what is used.
# Sourced by scripts/lab.

# Modules loaded in the guest, in this order, each after its dependencies. Missing ones are
# named in /lab/missing-modules so the tests that need them skip saying why.
GUEST_MODULES=(virtio_pci virtio_blk crc32c_generic crc32c_intel ext4 loop nbd ublk_drv
               dm_mod dm_flakey)

# Tools copied from the host (installed by scripts/setup) unless the guest packages have them.
GUEST_TOOLS=(fio mke2fs e2fsck losetup blkdiscard blockdev dd nbd-client dmsetup sha256sum
             cmp truncate stat)

# The module files (relative to the modules dir $1) for GUEST_MODULES, dependencies first, one a
# line; "missing NAME" lines for modules neither built in nor shipped.
resolve_modules() {
  local mods="$1"
  awk -v want="${GUEST_MODULES[*]}" -v builtin="$mods/modules.builtin" '
    function base(p,  b) { b = p; sub(/.*\//, "", b); sub(/\.ko.*$/, "", b); gsub(/-/, "_", b); return b }
    function visit(name,  i, n, d) {
      if (name in seen) return
      seen[name] = 1
      if (!(name in file)) { if (!(name in inkernel)) print "missing " name; return }
      n = split(deps[name], d, " ")
      for (i = n; i >= 1; i--) if (d[i] != "") visit(base(d[i]))
      print file[name]
    }
    BEGIN { while ((getline l < builtin) > 0) inkernel[base(l)] = 1 }
    { f = $1; sub(/:$/, "", f); b = base(f); file[b] = f; $1 = ""; deps[b] = $0 }
    END { n = split(want, w, " "); for (i = 1; i <= n; i++) visit(w[i]) }
  ' "$mods/modules.dep"
}

# Copies binary $1 to $2/lab/bin and every library ldd names to its own path under $2.
# LD_LIBRARY_PATH lets ldd find libraries that only the unpacked guest packages have.
copy_with_libs() {
  local bin="$1" root="$2" lib
  cp -L "$bin" "$root/lab/bin/"
  local pk="$CACHE/pkgroot"
  for lib in $(LD_LIBRARY_PATH="$pk/lib/x86_64-linux-gnu:$pk/usr/lib/x86_64-linux-gnu" \
               ldd "$bin" 2>/dev/null | grep -o '/[^ ]*'); do
    local dest="${lib#"$pk"}"
    [ -f "$root$dest" ] && continue
    mkdir -p "$root$(dirname "$dest")"
    cp -L "$lib" "$root$dest"
  done
}

# The path of tool $1: from the unpacked guest packages first, else the host's.
find_tool() {
  local d
  for d in usr/sbin usr/bin sbin bin; do
    [ -x "$CACHE/pkgroot/$d/$1" ] && { echo "$CACHE/pkgroot/$d/$1"; return 0; }
  done
  command -v "$1" 2>/dev/null || PATH="/usr/sbin:/sbin:$PATH" command -v "$1" 2>/dev/null
}

# Builds $WORK/$series/initramfs.cpio and $WORK/$series/payload for kernel series $1 with
# vecio binary $2.
build_image() {
  local series="$1" vecio="$2" kdir="$CACHE/kernel/$1"
  local root="$WORK/$series/root" kver; kver="$(cat "$kdir/version")"
  local payload="$WORK/$series/payload/.lab/root"
  rm -rf "$root" "$WORK/$series/payload"
  mkdir -p "$root"/{bin,lab/run,lib/modules,usr/lib,etc,proc,sys,dev,tmp,run,scratch,results} \
           "$payload/lab/bin"
  cp "$(find_tool busybox)" "$root/bin/busybox"
  add_modules "$kdir" "$root"
  local t path
  for t in "${GUEST_TOOLS[@]}"; do
    path="$(find_tool "$t")" || { echo "lab: tool $t not found; tests needing it skip" >&2; continue; }
    copy_with_libs "$path" "$payload"
  done
  ln -sf mke2fs "$payload/lab/bin/mkfs.ext4"; ln -sf e2fsck "$payload/lab/bin/fsck.ext4"
  # Further host programs a caller asks for (VECIO_LAB_TOOLS, paths separated by spaces: the
  # bench's peers such as rublk), with their libraries.
  for path in ${VECIO_LAB_TOOLS:-}; do
    [ -x "$path" ] || { echo "lab: VECIO_LAB_TOOLS: $path is not an executable" >&2; return 1; }
    copy_with_libs "$path" "$payload"
  done
  copy_with_libs "$vecio" "$payload"
  strip --strip-debug "$payload/lab/bin/vecio"
  [ -x "$CACHE/fsx/fsx" ] && cp -L "$CACHE/fsx/fsx" "$payload/lab/bin/fsx"
  # The payload's directories the guest links into its root: each one that holds files and
  # has no such ancestor.
  (cd "$payload" && find . -type f -printf '%h\n' | sed 's|^\./||' | sort -u \
     | awk '{ for (i in keep) if (index($0, keep[i] "/") == 1) next; keep[NR] = $0; print }') \
     > "$WORK/$series/payload/.lab/links"
  cp "$LAB_D/guest/init" "$root/init" && chmod 755 "$root/init"
  cp "$LAB_D/guest/"*.sh "$root/lab/"
  local s
  for s in "${SCRIPTS[@]}"; do cp "$s" "$root/lab/run/"; done
  printf 'LAB_FULL=%s\nLAB_KERNEL=%s\nLAB_SERIES=%s\n' "$FULL" "$kver" "$series" > "$root/lab/env"
  (cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) \
    > "$WORK/$series/initramfs.cpio"
}

# The modules of GUEST_MODULES (decompressed) into $2/lib/modules, their load order in
# $2/lab/modules, the ones kernel $1 lacks in $2/lab/missing-modules.
add_modules() {
  local kdir="$1" root="$2" line name ko
  : > "$root/lab/modules"; : > "$root/lab/missing-modules"
  while read -r line; do
    case "$line" in
      missing\ *) echo "${line#missing }" >> "$root/lab/missing-modules"; continue ;;
    esac
    name="$(basename "$line")"; ko="${name%.xz}"; ko="${ko%.zst}"
    case "$name" in
      *.ko.xz) xz -dc "$kdir/modules/$line" > "$root/lib/modules/$ko" ;;
      *.ko.zst) zstd -qdc "$kdir/modules/$line" > "$root/lib/modules/$ko" ;;
      *) cp "$kdir/modules/$line" "$root/lib/modules/$ko" ;;
    esac
    echo "$ko" >> "$root/lab/modules"
  done < <(resolve_modules "$kdir/modules")
}
