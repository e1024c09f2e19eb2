#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Regenerate a gocryptfs vector tarball like tests/data/
# gocryptfs-2.3-vectors.tar.gz from the installed gocryptfs: one folder per
# variant with cipher/, plain/, password.txt ("test"), masterkey.hex,
# info.txt, init.log and vectors.txt (see tests/data/README).
# Each -init draws a new master key, so the result differs from the
# committed tarball byte for byte. Needs root (or the fuse group),
# /dev/fuse, gocryptfs, gocryptfs-xray, fusermount3, script, python3.
#   usage: gen_vectors.sh OUT.tar.gz [VARIANT...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
py="python3 $here/gen_vectors.py"

[ $# -ge 1 ] || { echo "usage: $0 OUT.tar.gz [VARIANT...]" >&2; exit 2; }
case $1 in /*) out=$1 ;; *) out=$PWD/$1 ;; esac
shift
for t in gocryptfs gocryptfs-xray fusermount3 script python3; do
	command -v "$t" >/dev/null || { echo "gen_vectors: $t not found" >&2; exit 1; }
done

# name, then the -init flags; "-reverse" variants encrypt plain/ as a view
variants=(
	"gcm"
	"aessiv -aessiv"
	"xchacha -xchacha"
	"plaintextnames -plaintextnames"
	"deterministic-names -deterministic-names"
	"longnamemax100 -longnamemax 100"
	"reverse -reverse"
	"reverse-plaintextnames -reverse -plaintextnames"
)

work=$(mktemp -d /tmp/veilfs-vectors.XXXXXX)
mnt=$work/mnt
mkdir "$mnt" "$work/v"
cleanup() {
	fusermount3 -u -z "$mnt" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
cd "$work/v"

mount_it() { # mount_it NAME CIPHERDIR [flags]: mount on $mnt with a ctlsock
	local name=$1 dir=$2
	shift 2
	rm -f "$work/ctl.sock"
	gocryptfs -q -nosyslog -passfile "$name/password.txt" \
		-ctlsock "$work/ctl.sock" "$@" "$dir" "$mnt"
}

# name table: plaintext path TAB stored path, for everything in the
# plaintext tree $1 (asked of the mount's control socket)
names() {
	(cd "$1" && find . -mindepth 1 ! -name .gocryptfs.reverse.conf \
		-printf '%P\n' | LC_ALL=C sort) >"$work/plain.lst"
	gocryptfs-xray -encrypt-paths "$work/ctl.sock" <"$work/plain.lst" >"$work/enc.lst"
	paste "$work/plain.lst" "$work/enc.lst"
}

# The key as gocryptfs -init printed it (init.log) and as -dumpmasterkey
# decrypts it from the config must agree.
master_key() { # master_key NAME CONF
	local printed dumped
	printed=$(grep -E '^ +[0-9a-f]{8}-' "$1/init.log" | tr -d -- '\n -')
	dumped=$(gocryptfs-xray -dumpmasterkey "$2" <"$1/password.txt")
	if [ "$printed" != "$dumped" ]; then
		echo "gen_vectors: $1: printed key '$printed' != dumped '$dumped'" >&2
		return 1
	fi
	echo "$dumped" >"$1/masterkey.hex"
}

gen() { # gen NAME [init flags]
	local name=$1 reverse='' src conf
	shift
	case " $* " in *" -reverse "*) reverse=1 ;; esac
	echo "gen_vectors: $name: gocryptfs -init $*"
	mkdir "$name"
	printf 'test\n' >"$name/password.txt"
	if [ -n "$reverse" ]; then
		# gocryptfs 2.3 has no xattr support in reverse mode
		$py populate "$name/plain" --no-xattrs
		src=$name/plain conf=$name/plain/.gocryptfs.reverse.conf
	else
		mkdir "$name/cipher"
		$py populate "$name/plain"
		src=$name/cipher conf=$name/cipher/gocryptfs.conf
	fi
	# under a pseudo-terminal, so that -init prints the master key; the
	# log keeps the text without CRs and colours
	script -q -e -c "gocryptfs -init -scryptn 10 $* -passfile $name/password.txt $src" \
		/dev/null | sed 's/\r$//; s/\x1b\[[0-9;]*m//g' >"$name/init.log"
	master_key "$name" "$conf"
	if [ -n "$reverse" ]; then
		gocryptfs -info -reverse "$src" >"$name/info.txt"
		mount_it "$name" "$src" -reverse -ro
		names "$src" >"$name/names.tsv"
		$py copy "$mnt" "$name/cipher"
		fusermount3 -u "$mnt"
		# the copied view mounts forward and reads as plain/
		mount_it "$name" "$name/cipher" -ro
	else
		gocryptfs -info "$src" >"$name/info.txt"
		mount_it "$name" "$src"
		$py populate "$mnt"
		names "$mnt" >"$name/names.tsv"
		fusermount3 -u "$mnt"
		mount_it "$name" "$src" -ro
	fi
	$py compare "$mnt" "$name/plain"
	fusermount3 -u "$mnt"
	$py describe "$conf" "$(cat "$name/masterkey.hex")" "$name/names.tsv" \
		"$name/cipher" >"$name/vectors.txt"
	rm "$name/names.tsv"
}

want=" $* "
for v in "${variants[@]}"; do
	# shellcheck disable=SC2086
	set -- $v
	[ "$want" = "  " ] || case $want in *" $1 "*) ;; *) continue ;; esac
	gen "$@"
done
[ -n "$(ls)" ] || { echo "gen_vectors: no such variant:$want" >&2; exit 2; }

# shellcheck disable=SC2086
cat >README.txt <<EOF
gocryptfs vectors made by veilfs's tests/data/gen_vectors.sh
with $(gocryptfs -version | head -1).
Password "test" (password.txt), scrypt N=1024 (-scryptn 10).
Each folder: cipher/ (with its user.gocryptfs.* xattrs), plain/ (the tree
written through the mount; reverse: the source tree), masterkey.hex,
info.txt (gocryptfs -info), init.log (gocryptfs -init on a terminal),
vectors.txt (derived keys, name table, block layout, stored xattrs).
$(for v in "${variants[@]}"; do set -- $v; [ -d "$1" ] && echo "  $1: -init $(shift; echo "$*")"; done)
EOF
tar --xattrs --xattrs-include='*' --sort=name --owner=0 --group=0 \
	--numeric-owner -cf - . | gzip -n -9 >"$out"
echo "gen_vectors: wrote $out ($(stat -c %s "$out") bytes)"
