# What scripts/check-fresh-machine and scripts/check-container share: Debian 12 root filesystems,
# a copy of HEAD, a free port. Sourced; needs root and `install-deps machine`.
#
# Two root filesystems, made once per machine as tarballs in the cache directory
# (MODALSTACK_CACHE, default ~/.cache/modalstack; delete it to make them again):
#   minbase   `debootstrap --variant=minbase bookworm` from the mirror apt uses here: the base
#             system, and the stand-in for debian:bookworm-slim;
#   swift     minbase plus the apt layer of the official Swift Debian 12 image, what a fresh
#             machine of this kind has besides the toolchain itself (bind-mounted from /opt/swift),
#             and the stand-in for swift:6.3.1-bookworm.
# A tarball's name carries a hash of what made it, so a change to the package list makes it anew.

debian_suite=bookworm
# The apt layer of the official swift:6.3.1-bookworm image, installed as it is there (with
# recommends, which bring ca-certificates among others).
swift_image_packages=(binutils libicu-dev libcurl4-openssl-dev libedit-dev libsqlite3-dev libncurses-dev
  libpython3-dev libxml2-dev pkg-config uuid-dev tzdata git gcc libstdc++-12-dev)

debian_cache_dir() {
  local dir=${MODALSTACK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/modalstack}
  mkdir -p "$dir" && echo "$dir"
}

# The mirror apt already uses here (nothing else may be reachable).
debian_mirror() {
  local uri
  uri=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
  [ -n "$uri" ] || uri=$(sed -n 's/^deb[[:space:]]\+\(http[^[:space:]]*\)[[:space:]]\+bookworm[[:space:]].*/\1/p' /etc/apt/sources.list 2>/dev/null | head -n 1)
  echo "${uri:-http://deb.debian.org/debian}"
}

# Runs a command inside ROOT as root, in new mount and PID namespaces so that every mount goes away
# with it: /proc (without it a Swift binary sees no command-line arguments), /dev, /sys and the
# host's Swift toolchain read-only at /opt/swift. /tmp stays the root filesystem's own directory,
# on disk as on a machine here (tmpfs would let an open descriptor write through chattr +i). The
# network and DNS are the host's. The environment starts empty but for what is set here and the
# NAME=VALUE words before the command: debian_chroot ROOT [NAME=VALUE...] COMMAND...
debian_chroot() {
  local root=$1
  shift
  local environment=(HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 TERM=dumb)
  while (($#)) && [[ $1 == *=* ]]; do
    environment+=("$1")
    shift
  done
  mkdir -p "$root/opt/swift" "$root/proc" "$root/dev" "$root/sys"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  unshare --mount --pid --fork --propagation private -- bash -c '
    set -e
    root=$1; shift
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount -t sysfs -o ro sysfs "$root/sys"
    if [ -d /opt/swift ]; then mount --bind -o ro /opt/swift "$root/opt/swift"; fi
    exec chroot "$root" /usr/bin/env -i "$@"
  ' debian-chroot "$root" "${environment[@]}" "$@"
}

# Unpacks a tarball into a new directory under PARENT and prints the directory.
debian_unpack() {
  local tarball=$1 parent=$2 dir
  dir=$(mktemp -d "$parent/rootfs.XXXXXX")
  tar -C "$dir" -xf "$tarball"
  echo "$dir"
}

# Prints the minbase tarball's path, making it first if the cache has none.
debian_minbase_tarball() {
  local cache mirror key tarball work
  cache=$(debian_cache_dir)
  mirror=$(debian_mirror)
  key=$(printf '%s\n' "$debian_suite" "$mirror" minbase | sha256sum | cut -c1-12)
  tarball="$cache/debian-$debian_suite-minbase-$key.tar"
  if [ ! -f "$tarball" ]; then
    echo "machine-checks: debootstrap --variant=minbase $debian_suite from $mirror (once per machine)" >&2
    work=$(mktemp -d "$cache/debootstrap.XXXXXX")
    if ! debootstrap --variant=minbase "$debian_suite" "$work/root" "$mirror" >"$work/log" 2>&1; then
      echo "machine-checks: debootstrap failed; the end of its log:" >&2
      tail -n 30 "$work/log" >&2
      tail -n 30 "$work/root/debootstrap/debootstrap.log" >&2 2>/dev/null || true
      rm -rf "$work"
      return 1
    fi
    rm -rf "$work/root/var/cache/apt/archives/"*.deb "$work/root/var/lib/apt/lists/"*
    tar -C "$work/root" -cf "$tarball.partial" . && mv "$tarball.partial" "$tarball"
    rm -rf "$work"
  fi
  echo "$tarball"
}

# Prints the swift tarball's path (minbase plus the Swift image's apt layer), making it if needed.
debian_swift_tarball() {
  local cache minbase key tarball work root
  cache=$(debian_cache_dir)
  minbase=$(debian_minbase_tarball) || return 1
  key=$(printf '%s\n' "$minbase" "${swift_image_packages[@]}" | sha256sum | cut -c1-12)
  tarball="$cache/debian-$debian_suite-swift-$key.tar"
  if [ ! -f "$tarball" ]; then
    echo "machine-checks: adding the Swift image's apt layer (once per machine)" >&2
    work=$(mktemp -d "$cache/swift-layer.XXXXXX")
    root=$(debian_unpack "$minbase" "$work")
    if ! debian_chroot "$root" DEBIAN_FRONTEND=noninteractive bash -c \
      'apt-get update -q && apt-get install -y -q "$@" && apt-get clean && rm -rf /var/lib/apt/lists/*' \
      apt-layer "${swift_image_packages[@]}" >"$work/log" 2>&1; then
      echo "machine-checks: installing the Swift image's packages failed; the end of the log:" >&2
      tail -n 30 "$work/log" >&2
      rm -rf "$work"
      return 1
    fi
    tar -C "$root" -cf "$tarball.partial" . && mv "$tarball.partial" "$tarball"
    rm -rf "$work"
  fi
  echo "$tarball"
}

# Extracts `git archive HEAD` into DIR: what is committed, nothing untracked (no .build, no venv)
# that could hide a missing install step. Says so when the working tree has changes it leaves out.
copy_head() {
  git diff --quiet HEAD -- 2>/dev/null \
    || echo "note: uncommitted changes are left out of the copy; it is HEAD ($(git rev-parse --short HEAD))" >&2
  mkdir -p "$1"
  git archive HEAD | tar -x -C "$1"
}

# A TCP port free on 127.0.0.1 at the moment of asking.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
