#!/bin/sh
# Extract the gocryptfs 2.3 vector tarball (with xattrs) into DEST and touch
# STAMP. Usage: extract_vectors.sh TARBALL DEST STAMP
set -eu
tarball=$1 dest=$2 stamp=$3
if [ ! -f "$tarball" ]; then
	echo "extract_vectors: '$tarball' not found (shared/ must sit beside the checkout)" >&2
	exit 1
fi
rm -rf "$dest"
mkdir -p "$dest"
tar --xattrs --xattrs-include='*' -xzf "$tarball" -C "$dest"
touch "$stamp"
