# The lab's downloads: Debian's guest kernels and the guest's tools, fetched with apt-get download
# into a private apt tree under the cache and unpacked with dpkg -x. The host's own apt sources,
# lists and package state are never changed. Sourced by scripts/lab.

# The package-name prefix of each kernel series. 6.1 is Debian 12's own kernel (bookworm and
# its security updates); 6.12 comes from bookworm-backports (trixie's kernel series).
kernel_prefix() {
  case "$1" in
    6.1) echo linux-image-6.1.0- ;;
    6.12) echo linux-image-6.12. ;;
    *) echo "lab: unknown kernel series $1 (6.1, 6.12)" >&2; return 1 ;;
  esac
}

# Packages unpacked into the guest whatever the host has (their libraries too, where the host
# lacks them). The other guest tools (fio, e2fsprogs, util-linux, coreutils) are the host's own,
# installed by scripts/setup, copied in with the libraries ldd names.
GUEST_PKGS=(busybox-static nbd-client dmsetup)

APT_DIR="$CACHE/apt"
apt_opts() {
  echo "-o Dir::Etc=$APT_DIR/etc -o Dir::State=$APT_DIR/state -o Dir::Cache=$APT_DIR/cache" \
       "-o Dir::State::status=${1:-$APT_DIR/state/status} -o APT::Architecture=amd64" \
       "-o Debug::NoLocking=1 -o Acquire::Retries=3 -o APT::Sandbox::User=root"
}

# A private apt tree (its own sources, lists and cache), updated at most once a day.
apt_prepare() {
  mkdir -p "$APT_DIR"/etc/{sources.list.d,preferences.d,apt.conf.d,trusted.gpg.d} \
           "$APT_DIR"/state/lists/partial "$APT_DIR"/cache/archives/partial
  touch "$APT_DIR/state/status"
  local key=/usr/share/keyrings/debian-archive-keyring.gpg
  cat > "$APT_DIR/etc/sources.list" <<SOURCES
deb [signed-by=$key] http://deb.debian.org/debian bookworm main
deb [signed-by=$key] http://deb.debian.org/debian bookworm-updates main
deb [signed-by=$key] http://deb.debian.org/debian bookworm-backports main
deb [signed-by=$key] http://deb.debian.org/debian-security bookworm-security main
SOURCES
  local stamp="$APT_DIR/state/updated"
  if [ -z "$(find "$stamp" -mmin -1440 2>/dev/null)" ]; then
    echo "lab: apt-get update (private lists under $APT_DIR)"
    # shellcheck disable=SC2046
    apt-get $(apt_opts) update -qq >/dev/null
    touch "$stamp"
  fi
}

# apt-get download of the named packages into directory $1, then dpkg -x of each into $2.
download_unpack() {
  local debs="$1" root="$2"; shift 2
  mkdir -p "$debs" "$root"
  # shellcheck disable=SC2046
  (cd "$debs" && apt-get $(apt_opts) download -qq "$@" >/dev/null)
  local d
  for d in "$debs"/*.deb; do dpkg -x "$d" "$root"; done
}

# The unpacked kernel of series $1 in $CACHE/kernel/$1 (vmlinuz, lib/modules/VERSION, version),
# fetched once: the newest Debian kernel of that series in bookworm (with its updates and
# backports), or $VECIO_LAB_KERNEL_<series>
# (a package name, 6.1 -> VECIO_LAB_KERNEL_6_1) when set.
fetch_kernel() {
  local series="$1" dir="$CACHE/kernel/$1"
  [ -f "$dir/done" ] && return 0
  local prefix; prefix="$(kernel_prefix "$series")" || return 1
  apt_prepare
  local var="VECIO_LAB_KERNEL_${series//./_}" pkg
  pkg="${!var:-}"
  if [ -z "$pkg" ]; then
    # shellcheck disable=SC2046
    pkg="$(apt-cache $(apt_opts) show linux-image-amd64 2>/dev/null \
           | sed -n 's/^Depends: \(linux-image-[^ ,]*\).*/\1/p' | grep -F "$prefix" \
           | sort -V | tail -n1)"
  fi
  [ -n "$pkg" ] || { echo "lab: no $prefix* kernel in Debian's lists" >&2; return 1; }
  echo "lab: fetching $pkg"
  rm -rf "$dir" && mkdir -p "$dir"
  download_unpack "$dir/debs" "$dir/root" "$pkg"
  local v; v="$(ls "$dir/root/lib/modules" | head -n1)"
  cp "$dir/root/boot/vmlinuz-$v" "$dir/vmlinuz"
  # The package leaves modules.dep to its postinst: depmod writes it into the unpacked tree.
  depmod -b "$dir/root" "$v"
  mv "$dir/root/lib/modules/$v" "$dir/modules" && echo "$v" > "$dir/version"
  rm -rf "$dir/root" "$dir/debs"
  touch "$dir/done"
}

# The guest's packages unpacked in $CACHE/pkgroot, with whichever of their dependencies the
# host lacks (apt's simulated install against the host's package state).
fetch_guest_pkgs() {
  local root="$CACHE/pkgroot" want
  want="$(printf '%s\n' "${GUEST_PKGS[@]}" | sort | tr '\n' ' ')"
  [ -f "$root/done" ] && [ "$(cat "$root/done")" = "$want" ] && return 0
  apt_prepare
  local pkgs
  # shellcheck disable=SC2046
  pkgs="$(apt-get $(apt_opts /var/lib/dpkg/status) -s install --no-install-recommends \
          -t bookworm "${GUEST_PKGS[@]}" 2>/dev/null | sed -n 's/^Inst \([^ ]*\) (.*/\1/p')"
  pkgs="$(printf '%s\n' $pkgs "${GUEST_PKGS[@]}" | sort -u)"
  echo "lab: fetching guest packages: $(echo $pkgs)"
  rm -rf "$root" "$CACHE/pkgdebs"
  # shellcheck disable=SC2086
  download_unpack "$CACHE/pkgdebs" "$root" $pkgs
  rm -rf "$CACHE/pkgdebs"
  echo "$want" > "$root/done"
}

# fsx (xfstests' ltp/fsx.c) built static from ../shared/conformance/xfstests, once per source.
build_fsx() {
  local src="$XFSTESTS/ltp/fsx.c" out="$CACHE/fsx"
  [ -f "$src" ] || { echo "lab: $src missing; fsx tests will skip" >&2; return 0; }
  local sum; sum="$(cat "$src" "$LAB_D/fsx-config.h" | sha256sum | cut -c1-16)"
  [ -x "$out/fsx-$sum" ] && { ln -sf "fsx-$sum" "$out/fsx"; return 0; }
  mkdir -p "$out/include"
  cp "$LAB_D/fsx-config.h" "$out/include/config.h"
  gcc -O2 -static -D_GNU_SOURCE -I"$out/include" -I"$XFSTESTS/src" -I"$XFSTESTS/include" \
      -o "$out/fsx-$sum" "$src"
  ln -sf "fsx-$sum" "$out/fsx"
}
