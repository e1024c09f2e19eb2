#!/bin/sh
# Extract the gocryptfs vector tarball (tests/data, with its xattrs) into
# DEST, once per tarball content, then run CMD if one is given. The unit
# tests run through this and the integration suite calls it from conftest.py,
# so only the tests need the data, never the default build target.
# Parallel callers serialize on DEST.lock.
# Usage: extract_vectors.sh TARBALL DEST [CMD [ARG...]]
set -eu
tarball=$1 dest=$2
shift 2
if [ ! -f "$tarball" ]; then
	echo "extract_vectors: '$tarball' not found (see tests/data/README)" >&2
	exit 1
fi
sum=$(sha256sum <"$tarball")
mkdir -p "$(dirname "$dest")"
exec 9>"$dest.lock"
flock 9
if [ ! -d "$dest" ] || [ "$(cat "$dest.stamp" 2>/dev/null)" != "$sum" ]; then
	rm -rf "$dest" "$dest.stamp"
	mkdir "$dest"
	tar --xattrs --xattrs-include='*' -xzf "$tarball" -C "$dest"
	echo "$sum" >"$dest.stamp"
fi
exec 9>&-
[ $# -eq 0 ] || exec "$@"
