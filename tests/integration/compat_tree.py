# SPDX-License-Identifier: MIT
"""The tree written by the cross-compatibility tests: files at block-edge
sizes, holes, a truncated file, long and UTF-8 names, nested directories,
symlinks (relative, absolute, long targets), a fifo, hard links, modes and
xattrs. `populate` writes it, `modify` changes it the way a second user
would (appends, overwrites, truncates, renames, deletes, new xattrs)."""

import os

import util
from util import write_file

# "-gcm" is veilfs's explicit default; Mounter.init drops it for gocryptfs.
INIT_VARIANTS = {
    "gcm": ["-gcm"],
    "aessiv": ["-aessiv"],
    "xchacha": ["-xchacha"],
    "plaintextnames": ["-gcm", "-plaintextnames"],
    "deterministic-names": ["-gcm", "-deterministic-names"],
    "longnamemax100": ["-gcm", "-longnamemax", "100"],
}


def populate(root):
    def j(*a):
        return os.path.join(root, *a)

    for n in (0, 1, 4095, 4096, 4097, 5000, 8192, 12289, 70000):
        write_file(j("size%d.bin" % n), util.rand_bytes(n, n))
    with open(j("holes.bin"), "wb") as f:
        f.seek(10000)
        f.write(b"X")
    with open(j("bighole.bin"), "wb") as f:
        f.write(b"start")
        f.seek(3 * 1024 * 1024 + 5)
        f.write(b"end")
    write_file(j("trunc.bin"), util.rand_bytes(5000, 77))
    os.truncate(j("trunc.bin"), 4097)
    write_file(j("one.txt"), b"A")
    os.setxattr(j("one.txt"), "user.foo", b"bar")
    os.setxattr(j("one.txt"), "user.empty", b"")
    os.setxattr(j("one.txt"), "user.big", util.rand_bytes(1000, 3))
    for n in (64, 100, 175, 176, 200, 255):
        write_file(j(("%d" % n).ljust(n, "n")), b"name of %d bytes" % n)
    write_file(j("caf\u00e9.txt"), "é".encode())
    write_file(j("\u65e5\u672c\u8a9e"), b"nihongo")
    write_file(j("private"), b"secret", 0o600)
    write_file(j("exec"), b"#!/bin/sh\n", 0o755)
    os.symlink("one.txt", j("link_rel"))
    os.symlink("/a/b/c/d", j("link_abs"))
    os.symlink("t" * 2000, j("link_long"))
    os.symlink("one.txt", j("S" * 220))
    os.mkfifo(j("fifo"), 0o640)
    os.mkdir(j("sub"))
    os.setxattr(j("sub"), "user.dirattr", b"x" * 10)
    write_file(j("sub", "inner.txt"), b"inner\n")
    os.mkdir(j("sub", "D" * 180))
    write_file(j("sub", "D" * 180, "deep.txt"), b"deep\n")
    os.mkdir(j("sub", "D" * 180, "E" * 255))
    write_file(j("sub", "D" * 180, "E" * 255, "F" * 255),
               util.rand_bytes(9000, 5))
    os.mkdir(j("emptydir"), 0o700)
    os.mkdir(j("same"))
    write_file(j("same", "one.txt"), b"same name, other dir")
    write_file(j("hl1"), b"hard link")
    os.link(j("hl1"), j("sub", "hl2"))


def modify(root):
    def j(*a):
        return os.path.join(root, *a)

    with open(j("size5000.bin"), "ab") as f:
        f.write(b"appended")
    with open(j("size70000.bin"), "r+b") as f:
        f.seek(4000)
        f.write(util.rand_bytes(10000, 99))
    os.truncate(j("size12289.bin"), 6000)
    os.truncate(j("size1.bin"), 9000)
    with open(j("holes.bin"), "r+b") as f:
        f.seek(5000)
        f.write(b"filled")
    os.rename(j("200".ljust(200, "n")), j("sub", "renamed".ljust(230, "r")))
    os.rename(j("size4096.bin"), j("short"))
    os.unlink(j("size4095.bin"))
    os.rmdir(j("emptydir"))
    os.rename(j("sub", "D" * 180), j("moved"))
    os.setxattr(j("one.txt"), "user.foo", b"changed")
    os.removexattr(j("one.txt"), "user.empty")
    os.setxattr(j("sub"), "user.new", b"n")
    os.chmod(j("private"), 0o640)
    os.symlink("../one.txt", j("sub", "uplink"))
    os.mkdir(j("newdir"))
    write_file(j("newdir", "G" * 255), util.rand_bytes(4097, 6))
    with open(j("sub", "hl2"), "ab") as f:
        f.write(b" (extended via 2nd link)")
