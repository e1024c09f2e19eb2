#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Build the libFuzzer seed corpora from the gocryptfs 2.3 vectors.

usage: make_seeds.py VECTORS_DIR OUT_DIR
Writes OUT_DIR/<target>/<n> files. The input layouts match the targets:
  fuzz_conf      config file bytes
  fuzz_names     1 flag byte (see fuzz_names.c) + stored name
  fuzz_longname  .name sidecar bytes
  fuzz_content   1 cipher byte (0 GCM, 1 SIV, 2 XChaCha) + file bytes
  fuzz_duration  a Go duration string (-idle)
  fuzz_ctlsock   a -ctlsock request
  fuzz_ignore    exclusion pattern text + NUL + NUL-separated paths
"""
import glob
import os
import sys

vec, out = sys.argv[1], sys.argv[2]
n = [0]


def put(target, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    n[0] += 1
    with open(os.path.join(d, '%05d' % n[0]), 'wb') as f:
        f.write(data)


def read(p):
    with open(p, 'rb') as f:
        return f.read()


for p in sorted(glob.glob(os.path.join(vec, '*', 'cipher', 'gocryptfs.conf'))
                + glob.glob(os.path.join(vec, 'passwd', 'gocryptfs.conf.*'))
                + glob.glob(os.path.join(vec, '*', 'plain',
                                         '.gocryptfs.reverse.conf'))):
    put('fuzz_conf', read(p))

gcm = os.path.join(vec, 'gcm', 'cipher')
for sub, flag in (('', 0), ('sub', 4)):
    d = gcm
    if sub:
        # the ciphertext name of "sub": the directory with a diriv inside
        for e in os.listdir(gcm):
            if os.path.isfile(os.path.join(gcm, e, 'gocryptfs.diriv')):
                d = os.path.join(gcm, e)
    for e in sorted(os.listdir(d)):
        put('fuzz_names', bytes([flag]) + e.encode())
        if e.endswith('.name') and not sub:
            # fuzz_longname decrypts with the root directory's IV: a
            # sidecar of "sub" would only ever take the EBADMSG path
            put('fuzz_longname', read(os.path.join(d, e)))
        if os.path.islink(os.path.join(d, e)):
            # an encrypted symlink target: the symlink decryption's
            # success path, which authentication keeps the fuzzer from
            # finding by itself
            put('fuzz_names',
                bytes([flag]) + os.readlink(os.path.join(d, e)).encode())
# xattr names as stored on the vector files (if the extraction kept them)
for e in sorted(os.listdir(gcm)):
    try:
        for x in os.listxattr(os.path.join(gcm, e), follow_symlinks=False):
            put('fuzz_names', b'\0' + x.encode())
    except OSError:
        pass
# padded base64 / plaintext flags with a few names
for e in ('hello.txt', 'sub', 'AAAAAAAAAAAAAAAAAAAAAA', 'gocryptfs.conf'):
    for flag in (1, 2, 8):
        put('fuzz_names', bytes([flag]) + e.encode())

for ci, name in enumerate(('gcm', 'aessiv', 'xchacha')):
    for p in sorted(glob.glob(os.path.join(vec, name, 'cipher', '*'))):
        if os.path.isfile(p) and not p.endswith(('.conf', '.diriv', '.name')):
            data = read(p)
            if len(data) <= 64 * 1024:
                put('fuzz_content', bytes([ci]) + data)

# -idle durations (Go syntax)
for s in ('0', '90s', '2h45m', '1.5h', '-1.5s', '.5s', '1\u00b5s', '5',
          '1e3s', '9223372036854775807ns', '1h2m3s4ms5us6ns'):
    put('fuzz_duration', s.encode())

# -ctlsock requests
for s in ('{"EncryptPath": "a/b"}', '{"DecryptPath": "x/../y//z/"}',
          '{"encryptpath": "/../a"}', '{"EncryptPath": "a", "DecryptPath": "b"}',
          '{}', 'null', '[1]', '{"EncryptPath": "\\u0000"}', '{garbage',
          '{"EncryptPath": "<&>\\u2028\\t"}'):
    put('fuzz_ctlsock', s.encode())
# exclusion patterns (gitignore syntax) and paths to match them against
paths = b'\0'.join([b'a', b'a/b', b'a/b/c.txt', b'x/a/f.bin', b'sp ace/s',
                     b'.hidden', b'q?x', b'st*r'])
for pat in (b'*.bin', b'/a', b'a/', b'**/b', b'a/**', b'a/**/c.txt',
            b'a/*.txt', b'!x\n*', b'# c\r\nx\r\n\\#c', b'[a-c]*',
            b'n[^1]', b'q[', b'st\\*r', b'  f  '):
    put('fuzz_ignore', pat + b'\0' + paths)
