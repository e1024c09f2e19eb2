#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Helpers of gen_vectors.sh (see README there): write the plaintext tree
the tests expect, copy a tree with plain read() calls, compare two trees,
and describe a variant in vectors.txt (derived keys, name table, per-file
block layout, stored xattrs). Keys are derived here with Python's own
scrypt and HMAC, independently of veilfs's C code."""

import base64
import hashlib
import hmac
import json
import os
import stat
import subprocess
import sys

PASSWORD = b"test"
INFO_EME = b"EME filename encryption"
INFO_CONTENT = {
    "gcm": b"AES-GCM file content encryption",
    "siv": b"AES-SIV file content encryption",
    "xchacha": b"XChaCha20-Poly1305 file content encryption",
}
KEY_LEN = {"gcm": 32, "siv": 64, "xchacha": 32}

# (relative path, content); holes.bin and trunc.bin are made apart.
FILES = [
    ("empty.txt", b""),
    ("one.txt", b"A"),
    ("hello.txt", b"hello world\n"),
    ("4096.bin", bytes(i % 256 for i in range(4096))),
    ("5000.bin", bytes(i % 251 for i in range(5000))),
    ("n" * 175, b"name of 175 bytes: longest name that is NOT hashed\n"),
    ("n" * 176, b"name of 176 bytes: shortest name that IS hashed\n"),
    ("L" * 200, b"long name of 200 bytes\n"),
    ("caf\u00e9.txt", b"Unicode name, NFC form\n"),
    ("sub/inner.txt", b"inner\n"),
    ("sub/" + "D" * 180 + "/deep.txt", b"deep\n"),
]
XATTRS = [("one.txt", "user.foo", b"bar"), ("one.txt", "user.empty", b""),
          ("sub", "user.dirattr", b"x" * 10)]


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def populate(root, xattrs):
    os.makedirs(os.path.join(root, "sub", "D" * 180))
    for rel, data in FILES:
        write(os.path.join(root, rel), data)
    # a 10000-byte hole (never written), then one byte
    with open(os.path.join(root, "holes.bin"), "wb") as f:
        f.seek(10000)
        f.write(b"X")
    # written as 5000 bytes, then cut inside the second block
    with open(os.path.join(root, "trunc.bin"), "wb") as f:
        f.write(bytes((7 * i) % 256 for i in range(5000)))
        f.truncate(4097)
    os.symlink("one.txt", os.path.join(root, "link_rel"))
    os.symlink("/a/b/c/d", os.path.join(root, "link_abs"))
    if xattrs:
        for rel, name, value in XATTRS:
            os.setxattr(os.path.join(root, rel), name, value)


def read_all(path):
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        chunks = []
        while True:
            b = os.read(fd, 65536)
            if not b:
                return b"".join(chunks)
            chunks.append(b)
    finally:
        os.close(fd)


def copy(src, dst):
    """Copy a tree with read() only: no SEEK_DATA/SEEK_HOLE, no
    copy_file_range (a reverse view reports plaintext holes there)."""
    os.mkdir(dst)
    dirs = []
    for dirpath, dirnames, filenames in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        out = os.path.normpath(os.path.join(dst, rel))
        for n in sorted(dirnames + filenames):
            s, d = os.path.join(dirpath, n), os.path.join(out, n)
            st = os.lstat(s)
            if stat.S_ISLNK(st.st_mode):
                os.symlink(os.readlink(s), d)
            elif stat.S_ISDIR(st.st_mode):
                os.mkdir(d)
                dirs.append((d, stat.S_IMODE(st.st_mode)))
            else:
                write(d, read_all(s))
                os.chmod(d, stat.S_IMODE(st.st_mode))
    for d, mode in reversed(dirs):
        os.chmod(d, mode)


def tree(root, skip=()):
    """{relpath: (kind, mode, content or target, user xattrs)}."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, root)
            if rel in skip:
                continue
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", None, os.readlink(p), {})
                continue
            xa = {a: os.getxattr(p, a) for a in os.listxattr(p)
                  if a.startswith("user.")}
            body = None if stat.S_ISDIR(st.st_mode) else read_all(p)
            out[rel] = ("dir" if body is None else "file",
                        stat.S_IMODE(st.st_mode), body, xa)
    return out


def compare(a, b):
    skip = (".gocryptfs.reverse.conf",)
    ta, tb = tree(a, skip), tree(b, skip)
    bad = sorted(k for k in set(ta) | set(tb) if ta.get(k) != tb.get(k))
    for k in bad[:20]:
        print("gen_vectors: %s differs between %s and %s" % (k[:60], a, b),
              file=sys.stderr)
    return 1 if bad else 0


def hkdf(ikm, info, n):
    """HKDF-SHA256 (RFC 5869) with an empty salt."""
    prk = hmac.new(b"\0" * 32, ikm, hashlib.sha256).digest()
    okm, t, i = b"", b"", 1
    while len(okm) < n:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        okm += t
        i += 1
    return okm[:n]


def algorithm(flags):
    if "AESSIV" in flags:
        return "siv"
    if "XChaCha20Poly1305" in flags:
        return "xchacha"
    return "gcm"


def describe(conf_path, mk_hex, names_path, cipher):
    """vectors.txt on stdout. The first lines carry the labels the unit
    tests look for (tests/unit/vecutil.c: vec_hex)."""
    with open(conf_path) as f:
        conf = json.load(f)
    sc = conf["ScryptObject"]
    flags = conf["FeatureFlags"]
    alg = algorithm(flags)
    mk = bytes.fromhex(mk_hex)
    kdf = hashlib.scrypt(PASSWORD, salt=base64.b64decode(sc["Salt"]),
                         n=sc["N"], r=sc["R"], p=sc["P"], dklen=sc["KeyLen"],
                         maxmem=64 << 20)
    kek = hkdf(kdf, INFO_CONTENT["gcm"], 32)
    blob = base64.b64decode(conf["EncryptedKey"])
    print("password (first line of password.txt): 'test'")
    print("master key: %s" % mk.hex())
    print("scrypt(password, Salt, N=%d, r=%d, p=%d, %d): %s"
          % (sc["N"], sc["R"], sc["P"], sc["KeyLen"], kdf.hex()))
    print("KEK = HKDF-SHA256(scrypt output, info='%s'): %s"
          % (INFO_CONTENT["gcm"].decode(), kek.hex()))
    print("EncryptedKey blob (%d bytes): nonce=%s ciphertext=%s tag=%s"
          % (len(blob), blob[:16].hex(), blob[16:-16].hex(),
             blob[-16:].hex()))
    print("feature flags: %s" % " ".join(flags))
    print("content algorithm: %s, content key (%d bytes): %s"
          % (alg, KEY_LEN[alg],
             hkdf(mk, INFO_CONTENT[alg], KEY_LEN[alg]).hex()))
    print("EME name key: %s" % hkdf(mk, INFO_EME, 32).hex())
    print()
    print("names (plaintext path -> stored path, from the control socket)")
    pairs = []
    with open(names_path, encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            plain, enc = line.rstrip("\n").split("\t")
            pairs.append((plain, enc))
            print("    %s -> %s" % (plain, enc))
    print()
    xflag = {"siv": ["-aessiv"], "xchacha": ["-xchacha"]}.get(alg, [])
    for plain, enc in pairs:
        p = os.path.join(cipher, enc)
        st = os.lstat(p)
        if not stat.S_ISREG(st.st_mode):
            continue
        print("FILE %s (plaintext %s, %d bytes stored)"
              % (enc, plain, st.st_size))
        if st.st_size == 0:
            continue
        r = subprocess.run(["gocryptfs-xray"] + xflag + [p],
                           stdout=subprocess.PIPE, check=True)
        for line in r.stdout.decode().splitlines():
            print("    " + line)
    print()
    print("stored xattrs (name = value in hex)")
    paths = [cipher]
    for dirpath, dirnames, filenames in os.walk(cipher):
        paths += [os.path.join(dirpath, n) for n in dirnames + filenames]
    for p in sorted(paths):
        if os.path.islink(p):
            continue
        for a in sorted(os.listxattr(p)):
            print("    %s: %s = %s" % (os.path.relpath(p, cipher), a,
                                      os.getxattr(p, a).hex()))
    return 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "populate":
        populate(argv[1], "--no-xattrs" not in argv[2:])
        return 0
    if len(argv) == 3 and argv[0] == "copy":
        copy(argv[1], argv[2])
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        return compare(argv[1], argv[2])
    if len(argv) == 5 and argv[0] == "describe":
        return describe(*argv[1:])
    print("usage: gen_vectors.py populate DIR [--no-xattrs] | copy SRC DST |"
          " compare A B | describe CONF MASTERKEY NAMES CIPHERDIR",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
