# SPDX-License-Identifier: MIT
"""Corrupt ciphertext as a user sees it: a damaged block reads as EIO while
the other blocks of the file still read; an undecryptable name is hidden
while its neighbours still list and open. (The exhaustive tamper matrix is
in test_reliability_tamper.py.)"""

import errno
import os

import util
from util import expect_errno, read_file, write_file

CBS = {"gcm": 4128, "aessiv": 4128, "xchacha": 4136}
NONCE = {"gcm": 16, "aessiv": 16, "xchacha": 24}


def _create_tracked(m, name, data):
    """Create NAME through the mount; return its backing path."""
    before = set(os.listdir(m.cipherdir))
    write_file(m.p(name), data)
    new = [n for n in set(os.listdir(m.cipherdir)) - before
           if not n.endswith(".name")]
    assert len(new) == 1, new
    return os.path.join(m.cipherdir, new[0])


def _flip(path, off):
    with open(path, "r+b") as f:
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ 0x40]))


def test_corrupt_block_is_eio(mounter, cvfs):
    v = cvfs.variant
    data = util.rand_bytes(3 * 4096, 9)
    back = _create_tracked(cvfs, "three", data)
    write_file(cvfs.p("other"), b"fine")
    assert os.stat(back).st_size == util.cipher_size(len(data),
                                                     cvfs.overhead)
    mounter.unmount(cvfs)
    # a byte in the middle of block 1's ciphertext
    _flip(back, 18 + CBS[v] + NONCE[v] + 1000)
    m = mounter.mount(cvfs.cipherdir)
    p = m.p("three")
    assert os.stat(p).st_size == len(data)
    fd = os.open(p, os.O_RDONLY)
    try:
        expect_errno(errno.EIO, os.pread, fd, 4096, 4096)
        expect_errno(errno.EIO, os.pread, fd, 1, 4096 + 4095)
        assert os.pread(fd, 4096, 0) == data[:4096]
        assert os.pread(fd, 4096, 8192) == data[8192:]
        assert os.pread(fd, 100, 8192 + 4000) == data[8192 + 4000:]
        # a read across the damage stops short of it or fails
        try:
            got = os.pread(fd, 3 * 4096, 0)
            assert len(got) <= 4096 and got == data[:len(got)]
        except OSError as e:
            assert e.errno == errno.EIO
    finally:
        os.close(fd)
    expect_errno(errno.EIO, read_file, p)
    assert read_file(m.p("other")) == b"fine"
    # overwriting the whole damaged block repairs the file
    with open(p, "r+b") as f:
        f.seek(4096)
        f.write(data[4096:8192])
    assert read_file(p) == data


def test_corrupt_header_is_eio(mounter, cvfs):
    back = _create_tracked(cvfs, "f", b"x" * 5000)
    mounter.unmount(cvfs)
    _flip(back, 5)  # inside the file ID: every block fails
    m = mounter.mount(cvfs.cipherdir)
    expect_errno(errno.EIO, read_file, m.p("f"))
    assert os.listdir(m.mnt) == ["f"]


def test_corrupt_names_are_hidden(mounter, encvfs):
    m = encvfs
    backs = {}
    for name in ("a", "b", "c", "L" * 200, "M" * 200):
        backs[name] = _create_tracked(m, name, name.encode())
    os.mkdir(m.p("dir"))
    mounter.unmount(m)
    # a name whose base64 decodes to a length no cipher block can have
    b = backs["b"]
    os.rename(b, b[:-3])
    # a hashed long name without its .name sidecar
    os.unlink(backs["L" * 200] + ".name")
    # garbage that is not base64 at all, and a stray long-name file
    write_file(os.path.join(m.cipherdir, "not*base64!"), b"junk")
    write_file(os.path.join(m.cipherdir, "gocryptfs.longname.xyz"), b"")
    m2 = mounter.mount(m.cipherdir)
    assert sorted(os.listdir(m2.mnt)) == sorted(["a", "c", "M" * 200,
                                                 "dir"])
    assert read_file(m2.p("a")) == b"a"
    assert read_file(m2.p("c")) == b"c"
    assert read_file(m2.p("M" * 200)) == b"M" * 200
    expect_errno(errno.ENOENT, os.stat, m2.p("b"))
    # the namespace keeps working next to the corrupt entries
    write_file(m2.p("b"), b"new b")
    assert read_file(m2.p("b")) == b"new b"
    os.rename(m2.p("a"), m2.p("dir", "a"))
    assert sorted(os.listdir(m2.mnt)) == sorted(["b", "c", "M" * 200,
                                                 "dir"])
