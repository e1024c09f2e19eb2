#!/usr/bin/env bash
# The main job, end to end: build veilfs, show the cipher benchmark, create a
# demo cipherdir, mount it, write and list files through it, show what lands
# on disk, and unmount. Run as root on Debian 12 (FUSE needs /dev/fuse).
# VEILFS_BIN=/usr/bin/veilfs runs it with an installed veilfs (the .deb),
# without building.
set -eu
cd "$(dirname "$0")/.."
if [ -n "${VEILFS_BIN:-}" ]; then
	bin=$VEILFS_BIN
else
	bash scripts/deps.sh
	[ -d build ] || meson setup build --buildtype=release >/dev/null
	ninja -C build >/dev/null
	bin=$PWD/build/src/veilfs
fi

demo=$(mktemp -d "${TMPDIR:-/tmp}/veilfs-demo.XXXXXX")
cipher=$demo/cipher mnt=$demo/plain pw=$demo/password
mkdir "$cipher" "$mnt"
echo "correct horse battery staple" >"$pw"
cleanup() { fusermount3 -u "$mnt" 2>/dev/null || true; }
trap cleanup EXIT

echo "== veilfs -speed"
"$bin" -speed
echo
echo "== veilfs -init $cipher"
"$bin" -init -scryptn 12 -passfile "$pw" "$cipher"
echo
echo "== veilfs -info $cipher"
"$bin" -info "$cipher"
echo
echo "== mount $cipher on $mnt"
"$bin" -passfile "$pw" "$cipher" "$mnt"
echo "hello from veilfs" >"$mnt/hello.txt"
mkdir "$mnt/docs"
head -c 1000000 /dev/urandom >"$mnt/docs/random.bin"
ln -s hello.txt "$mnt/link"
echo "== plaintext view:"
ls -la "$mnt" "$mnt/docs"
cat "$mnt/hello.txt"
echo "== ciphertext on disk:"
ls -la "$cipher"
echo "== unmount"
fusermount3 -u "$mnt"
trap - EXIT
echo "remounting to check the data survived:"
"$bin" -passfile "$pw" "$cipher" "$mnt"
cat "$mnt/hello.txt"
sha256sum "$mnt/docs/random.bin"
fusermount3 -u "$mnt"
echo "demo done: $demo"
