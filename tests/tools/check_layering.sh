#!/bin/sh
# The FUSE layer must stay ignorant of the cipher (style.md): src/fs may not
# include aead.h, OpenSSL or libgcrypt, nor name a cipher or backend.
# src/crypto may not include FUSE.
set -u
cd "$(dirname "$0")/../.."
bad=0
if grep -nEiw 'aead[a-z_]*|openssl|gcrypt|aes[-_0-9a-z]*|x?chacha[-_0-9a-z]*|siv|gcm|poly1305' src/fs/*.c src/fs/*.h; then
	echo "layering: src/fs names a cipher or crypto library (lines above)"
	bad=1
fi
if grep -nE '#include <fuse|fuse_lowlevel' src/crypto/*.c src/crypto/*.h; then
	echo "layering: src/crypto includes FUSE (lines above)"
	bad=1
fi
[ $bad = 0 ] && echo "layering: ok"
exit $bad
