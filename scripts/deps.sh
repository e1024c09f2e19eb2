#!/bin/sh
# Install the Debian 12 packages veilfs needs to build, run and test, when
# any is missing. Safe to run repeatedly; needs root (apt-get).
# "deps.sh deb" adds what building the .deb needs (the CI stage deb);
# "deps.sh bench" adds the other systems and tools bench/run compares with
# and uses (securefs, bindfs, git, rsync, fio, matplotlib for --plot).
set -eu
pkgs="meson ninja-build pkg-config gcc clang libfuse3-dev fuse3 libssl-dev
libjson-c-dev libgcrypt20-dev libscrypt-dev gocryptfs python3 python3-pytest
mandoc attr acl fio libclang-rt-14-dev python3-cryptography rsync
openssh-server sshfs moosefs-master moosefs-chunkserver moosefs-client
iproute2 strace qemu-user"
case "${1:-}" in
deb) pkgs="$pkgs build-essential dpkg-dev debhelper lintian" ;;
bench) pkgs="$pkgs securefs bindfs git python3-matplotlib" ;;
esac
missing=
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "deps: installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq $missing >/dev/null
fi
