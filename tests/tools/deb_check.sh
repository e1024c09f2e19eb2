#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The CI stage "deb": build the .deb from a copy of this tree
# (dpkg-buildpackage -us -uc -b, which runs the unit suite), check it with
# lintian, look at its contents, install it, and smoke-test the installed
# /usr/bin/veilfs: -version, -speed, -init + mount + write/read + unmount +
# remount, and the README demo (scripts/demo.sh with VEILFS_BIN). Needs
# root, /dev/fuse and the packages of "scripts/deps.sh deb". One "ok" or
# "not ok" line a check; the last line, "deb: N passed, N failed", is what
# .ci/run counts.
#   usage: tests/tools/deb_check.sh [OUTDIR]  (keeps the .deb there)
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/veilfs-deb.XXXXXX)
outdir=${1:-}
bin=/usr/bin/veilfs
n=0 pass=0 fail=0
mnt=$work/t/plain

cleanup() {
	fusermount3 -u -z "$mnt" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

check() { # check NAME CMD...: one result line, the output on failure
	local name=$1
	shift
	n=$((n + 1))
	if "$@" >"$work/out" 2>&1; then
		pass=$((pass + 1))
		echo "ok $n - $name"
	else
		fail=$((fail + 1))
		echo "not ok $n - $name"
		tail -n 40 "$work/out" | sed 's/^/#   /'
	fi
}

build() {
	# a copy of the tree as git sees it (tracked and new files, not
	# ignored ones), so that build dirs and the parent stay untouched
	mkdir "$work/src" "$work/src/veilfs"
	(cd "$src" && git ls-files -z --cached --others --exclude-standard |
		tar --null -T - --ignore-failed-read -cf -) |
		tar -xf - -C "$work/src/veilfs" || return 1
	(cd "$work/src/veilfs" &&
		DEB_BUILD_OPTIONS="parallel=2 ${DEB_BUILD_OPTIONS:-}" \
			dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1 || {
		tail -n 40 "$work/build.log"
		return 1
	}
	deb=$(ls "$work"/src/veilfs_*_*.deb)
	[ -z "$outdir" ] || cp "$deb" "$outdir/"
}

contents() {
	dpkg-deb -c "$deb" >"$work/list" &&
		for f in ./usr/bin/veilfs ./usr/share/man/man1/veilfs.1.gz \
			./usr/share/doc/veilfs/copyright \
			./usr/share/doc/veilfs/README.md \
			./usr/share/bash-completion/completions/veilfs; do
			# dh_compress gzips docs over 4 KiB
			grep -Eq " $f(\.gz)?\$" "$work/list" ||
				{ echo "missing $f"; return 1; }
		done &&
		dpkg-deb -f "$deb" Depends | tee /dev/stderr | grep -qw fuse3
}

install_it() {
	apt-get install -y -qq -o DPkg::Lock::Timeout=300 --reinstall "$deb" &&
		[ "$(dpkg-query -W -f='${Status}' veilfs)" = "install ok installed" ] &&
		installed=1
}

version() { # the binary's version is the package's
	local v
	v=$(dpkg-query -W -f='${Version}' veilfs) &&
		"$bin" -version | tee /dev/stderr | grep -q "^veilfs ${v}[; ]"
}

speed() {
	"$bin" -speed | tee /dev/stderr | grep -q "^-init would use "
}

roundtrip() {
	local t=$work/t
	mkdir -p "$t/cipher" "$mnt" &&
		echo "deb smoke password" >"$t/pw" &&
		head -c 300000 /dev/urandom >"$t/data" &&
		"$bin" -init -scryptn 10 -passfile "$t/pw" "$t/cipher" &&
		"$bin" -passfile "$t/pw" "$t/cipher" "$mnt" &&
		echo "veilfs deb smoke marker" >"$mnt/hello.txt" &&
		mkdir "$mnt/dir" && cp "$t/data" "$mnt/dir/data" &&
		cmp "$t/data" "$mnt/dir/data" &&
		fusermount3 -u "$mnt" &&
		! grep -rq "deb smoke marker" "$t/cipher" &&
		[ ! -e "$t/cipher/hello.txt" ] &&
		"$bin" -ro -passfile "$t/pw" "$t/cipher" "$mnt" &&
		[ "$(cat "$mnt/hello.txt")" = "veilfs deb smoke marker" ] &&
		cmp "$t/data" "$mnt/dir/data" &&
		fusermount3 -u "$mnt"
}

demo() {
	mkdir "$work/demo" &&
		TMPDIR=$work/demo VEILFS_BIN=$bin bash "$src/scripts/demo.sh"
}

deb='' installed=''
check "dpkg-buildpackage -us -uc -b" build
if [ -n "$deb" ]; then
	check "lintian: no errors" lintian --fail-on error "$deb"
	check "contents: binary, man page, completion, docs, copyright; depends on fuse3" contents
	check "install $(basename "$deb")" install_it
fi
if [ -n "$installed" ]; then
	check "$bin -version is the package version" version
	check "$bin -speed" speed
	check "$bin -init, mount, write, read, unmount, remount" roundtrip
	check "README demo: VEILFS_BIN=$bin scripts/demo.sh" demo
fi
echo "deb: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
