# SPDX-License-Identifier: MIT
"""Bigger and concurrent workloads: a 64 MiB random file round trip,
threads writing disjoint (block-sharing) ranges of one file, processes
appending with O_APPEND, and renames/unlinks over files that are still
open."""

import hashlib
import os
import subprocess
import sys
import threading

import util
from util import read_file, write_file

MIB = 1024 * 1024


def test_64mib_roundtrip(cvfs):
    p = cvfs.p("big")
    h = hashlib.sha256()
    # write in odd-sized chunks so that writes straddle block edges
    chunk = 1000003
    total = 64 * MIB
    with open(p, "wb") as f:
        done = 0
        i = 0
        while done < total:
            n = min(chunk, total - done)
            data = os.urandom(n)
            h.update(data)
            f.write(data)
            done += n
            i += 1
    assert os.stat(p).st_size == total
    back = util.only_backing_file(cvfs.cipherdir)
    assert os.stat(back).st_size == util.cipher_size(total, cvfs.overhead)
    h2 = hashlib.sha256()
    with open(p, "rb") as f:
        while True:
            b = f.read(3 * MIB + 17)
            if not b:
                break
            h2.update(b)
    assert h2.hexdigest() == h.hexdigest()
    os.unlink(p)


def test_threads_disjoint_ranges(cvfs):
    """Eight threads, each owning a range whose edges fall inside blocks
    shared with its neighbours: read-modify-write must be serialized."""
    p = cvfs.p("f")
    nthreads, span = 8, 300001
    write_file(p, b"")
    errors = []

    def worker(t):
        try:
            fd = os.open(p, os.O_WRONLY)
            try:
                start, end = t * span, (t + 1) * span
                data = util.rand_bytes(span, 100 + t)
                off = start
                step = 777 + 1000 * t
                while off < end:
                    n = min(step, end - off)
                    os.pwrite(fd, data[off - start:off - start + n], off)
                    off += n
            finally:
                os.close(fd)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,))
               for t in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    want = b"".join(util.rand_bytes(span, 100 + t) for t in range(nthreads))
    got = read_file(p)
    assert len(got) == len(want)
    if got != want:
        bad = next(i for i in range(len(want)) if got[i] != want[i])
        raise AssertionError("content differs first at offset %d "
                             "(block %d)" % (bad, bad // 4096))


APPENDER = r"""
import os, sys
path, ident, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
for i in range(n):
    rec = ("%s:%05d:" % (ident, i)).encode()
    rec += b"." * (99 - len(rec)) + b"\n"
    assert os.write(fd, rec) == 100
os.close(fd)
"""


def test_processes_append(vfs):
    p = vfs.p("log")
    write_file(p, b"")
    nproc, nrec = 4, 300
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, p,
                               "p%d" % i, str(nrec)])
             for i in range(nproc)]
    for pr in procs:
        assert pr.wait(timeout=120 * util.SLOW) == 0
    data = read_file(p)
    assert len(data) == nproc * nrec * 100
    lines = data.split(b"\n")[:-1]
    assert len(lines) == nproc * nrec
    seen = set()
    for line in lines:
        assert len(line) == 99, line[:40]
        ident, i, _ = line.split(b":", 2)
        seen.add((ident, int(i)))
    assert seen == {(b"p%d" % i, r) for i in range(nproc)
                    for r in range(nrec)}


def test_rename_over_open_file(vfs):
    old = util.rand_bytes(9000, 1)
    new = util.rand_bytes(5000, 2)
    write_file(vfs.p("a"), old)
    write_file(vfs.p("b"), new)
    fd = os.open(vfs.p("a"), os.O_RDONLY)
    try:
        os.rename(vfs.p("b"), vfs.p("a"))
        assert os.pread(fd, 10000, 0) == old
        assert read_file(vfs.p("a")) == new
        assert os.fstat(fd).st_size == 9000
    finally:
        os.close(fd)
    assert os.listdir(vfs.mnt) == ["a"]
    assert read_file(vfs.p("a")) == new


def test_open_file_survives_rename_of_its_dir(vfs):
    os.mkdir(vfs.p("d"))
    write_file(vfs.p("d", "f"), b"abc")
    fd = os.open(vfs.p("d", "f"), os.O_RDWR)
    try:
        os.rename(vfs.p("d"), vfs.p("e"))
        os.pwrite(fd, b"XYZ", 3)
        assert os.pread(fd, 10, 0) == b"abcXYZ"
    finally:
        os.close(fd)
    assert read_file(vfs.p("e", "f")) == b"abcXYZ"


def test_concurrent_tree_ops(vfs):
    """Threads creating, renaming and deleting in shared directories."""
    os.mkdir(vfs.p("shared"))
    errors = []

    def worker(t):
        try:
            for i in range(60):
                a = vfs.p("shared", "t%d-%d" % (t, i))
                write_file(a, b"%d-%d" % (t, i))
                b = vfs.p("shared", ("t%d-%d-" % (t, i)).ljust(200, "r"))
                os.rename(a, b)
                assert read_file(b) == b"%d-%d" % (t, i)
                if i % 2:
                    os.unlink(b)
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    want = {("t%d-%d-" % (t, i)).ljust(200, "r")
            for t in range(4) for i in range(0, 60, 2)}
    assert set(os.listdir(vfs.p("shared"))) == want
