# SPDX-License-Identifier: MIT
"""Namespace and metadata operations through a mount, over every variant:
lookup/stat, chmod/chown/utime, readdir, mkdir/rmdir, mknod, unlink,
rename (incl. renameat2 flags), hard links, symlinks, statfs, xattrs, long
names, and the errno values users see."""

import errno
import os
import socket
import stat
import threading
import time

import pytest

import util
from util import expect_errno, read_file, write_file


def test_stat_and_lookup(vfs):
    p = vfs.p("f")
    expect_errno(errno.ENOENT, os.stat, p)
    write_file(p, b"hello", 0o640)
    st = os.stat(p)
    assert stat.S_ISREG(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o640
    assert st.st_size == 5
    assert st.st_nlink == 1
    assert st.st_uid == os.getuid()
    # a file is not a directory
    expect_errno(errno.ENOTDIR, os.stat, vfs.p("f", "x"))
    expect_errno(errno.ENOTDIR, os.listdir, p)
    expect_errno(errno.ENOENT, os.stat, vfs.p("nodir", "x"))
    os.mkdir(vfs.p("d"))
    st = os.stat(vfs.p("d"))
    assert stat.S_ISDIR(st.st_mode)
    st = os.stat(vfs.mnt)
    assert stat.S_ISDIR(st.st_mode)


def test_getattr_sizes(vfs):
    for n in (0, 1, 4095, 4096, 4097, 8191, 8192, 8193, 10000, 100000):
        name = vfs.p("s%d" % n)
        write_file(name, util.rand_bytes(n, n))
        assert os.stat(name).st_size == n
        with open(name, "rb") as f:
            assert os.fstat(f.fileno()).st_size == n


def test_backing_size_matches_format(vfs):
    """The ciphertext file has exactly the size of format §3.8."""
    p = vfs.p("one")
    for n in (1, 4096, 4097, 5000, 10001, 0):
        write_file(p, util.rand_bytes(n, 7))
        back = util.only_backing_file(vfs.cipherdir)
        assert os.stat(back).st_size == util.cipher_size(n, vfs.overhead)


def test_chmod(vfs):
    p = vfs.p("f")
    write_file(p, b"x")
    for mode in (0o600, 0o755, 0o400, 0o4755, 0o1777, 0o000):
        os.chmod(p, mode)
        assert stat.S_IMODE(os.stat(p).st_mode) == mode
    os.chmod(p, 0o644)
    os.mkdir(vfs.p("d"))
    os.chmod(vfs.p("d"), 0o711)
    assert stat.S_IMODE(os.stat(vfs.p("d")).st_mode) == 0o711
    # the directory keeps working after a restrictive chmod
    write_file(vfs.p("d", "inner"), b"abc")
    os.chmod(vfs.p("d"), 0o500)
    assert read_file(vfs.p("d", "inner")) == b"abc"
    os.chmod(vfs.p("d"), 0o755)
    # the backing directory still needs to be usable by the daemon
    write_file(vfs.p("d", "inner2"), b"def")
    assert sorted(os.listdir(vfs.p("d"))) == ["inner", "inner2"]


@pytest.mark.skipif(os.getuid() != 0, reason="chown needs root")
def test_chown(vfs):
    p = vfs.p("f")
    write_file(p, b"x")
    os.chown(p, 1234, 5678)
    st = os.stat(p)
    assert (st.st_uid, st.st_gid) == (1234, 5678)
    os.chown(p, -1, 42)
    st = os.stat(p)
    assert (st.st_uid, st.st_gid) == (1234, 42)
    os.mkdir(vfs.p("d"))
    os.chown(vfs.p("d"), 99, 98)
    st = os.stat(vfs.p("d"))
    assert (st.st_uid, st.st_gid) == (99, 98)
    os.symlink("target", vfs.p("l"))
    os.lchown(vfs.p("l"), 77, 66)
    st = os.lstat(vfs.p("l"))
    assert (st.st_uid, st.st_gid) == (77, 66)
    assert os.readlink(vfs.p("l")) == "target"


def test_utime(vfs):
    p = vfs.p("f")
    write_file(p, b"x")
    at, mt = 1_000_000_123_456_789, 1_500_000_987_654_321
    os.utime(p, ns=(at, mt))
    st = os.stat(p)
    assert st.st_mtime_ns == mt
    assert st.st_atime_ns == at
    os.mkdir(vfs.p("d"))
    os.utime(vfs.p("d"), ns=(at, mt))
    assert os.stat(vfs.p("d")).st_mtime_ns == mt
    # utime(NULL): now
    os.utime(p)
    assert abs(os.stat(p).st_mtime - __import__("time").time()) < 60
    # writing updates mtime
    os.utime(p, ns=(at, mt))
    with open(p, "ab") as f:
        f.write(b"y")
    assert os.stat(p).st_mtime_ns != mt


def test_meta_through_open_descriptors(vfs):
    """fchmod/fchown/futimens on an open file (what tar does for every
    file) reach the backing file through the daemon's own descriptor,
    also after the file was unlinked or renamed."""
    p = vfs.p("f")
    at, mt = 1_100_000_000_000_000_001, 1_200_000_000_000_000_002
    fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        os.write(fd, b"tar member")
        os.fchown(fd, 1234, 5678)
        os.fchmod(fd, 0o751)
        os.utime(fd, ns=(at, mt))
        st = os.stat(p)
        assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (1234, 5678,
                                                                0o751)
        assert (st.st_atime_ns, st.st_mtime_ns) == (at, mt)
        assert st.st_size == len(b"tar member")
        if not vfs.plaintextnames:
            back = os.stat(util.only_backing_file(vfs.cipherdir))
            assert (back.st_uid, back.st_gid) == (1234, 5678)
            assert back.st_mode & 0o7777 == 0o751
            assert back.st_mtime_ns == mt
        os.rename(p, vfs.p("g"))
        os.fchmod(fd, 0o640)
        assert os.stat(vfs.p("g")).st_mode & 0o7777 == 0o640
        os.unlink(vfs.p("g"))
        os.fchmod(fd, 0o600)
        os.utime(fd, ns=(at, at))
        st = os.fstat(fd)
        assert st.st_mode & 0o7777 == 0o600 and st.st_mtime_ns == at
    finally:
        os.close(fd)
    # and by name once closed
    write_file(vfs.p("h"), b"x")
    os.chmod(vfs.p("h"), 0o604)
    assert os.stat(vfs.p("h")).st_mode & 0o7777 == 0o604


def test_readdir_hides_internal_files(vfs):
    names = {"a", "b.txt", "c" * 176, "d" * 255, "dir", "e f", "ü"}
    for n in names - {"dir"}:
        write_file(vfs.p(n), n.encode())
    os.mkdir(vfs.p("dir"))
    write_file(vfs.p("dir", "x" * 200), b"x")
    os.mkdir(vfs.p("dir", "sub"))
    assert set(os.listdir(vfs.mnt)) == names
    assert set(os.listdir(vfs.p("dir"))) == {"x" * 200, "sub"}
    assert os.listdir(vfs.p("dir", "sub")) == []
    kinds = {e.name: (e.is_dir(follow_symlinks=False),
                      e.is_file(follow_symlinks=False))
             for e in os.scandir(vfs.mnt)}
    assert kinds["dir"] == (True, False)
    assert kinds["a"] == (False, True)
    # internal names are not reachable either
    if not vfs.plaintextnames:
        expect_errno(errno.ENOENT, os.stat, vfs.p("gocryptfs.diriv"))
    for n in names - {"dir"}:
        assert read_file(vfs.p(n)) == n.encode()


def test_readdir_large_directory(vfs):
    want = set()
    for i in range(600):
        n = ("%04d-" % i) + "x" * (i % 230)
        want.add(n)
        os.close(os.open(vfs.p(n), os.O_CREAT | os.O_WRONLY, 0o644))
    assert set(os.listdir(vfs.mnt)) == want
    assert len(os.listdir(vfs.mnt)) == 600
    # listing while deleting does not lose or duplicate survivors
    for n in sorted(want)[::2]:
        os.unlink(vfs.p(n))
        want.discard(n)
    assert sorted(os.listdir(vfs.mnt)) == sorted(want)


def test_mkdir_keeps_the_inherited_setgid_bit(vfs, tmp_path):
    """A directory made in a set-group-ID directory inherits the bit, as on
    the backing filesystem and under gocryptfs, also with a mode that does
    not give its owner every right (veilfs makes such a directory 0700
    first to write its IV file, then sets the mode: that once dropped the
    bit); the sticky bit asked for stays."""
    bare = tmp_path / "bare"
    bare.mkdir()
    for top in (vfs.mnt, str(bare)):
        d = os.path.join(top, "sg")
        os.mkdir(d)
        os.chmod(d, 0o2775)
        got = []
        for mode in (0o755, 0o500, 0o1750):
            sub = os.path.join(d, "m%o" % mode)
            os.mkdir(sub, mode)
            got.append(stat.S_IMODE(os.stat(sub).st_mode))
        if top == vfs.mnt:
            shown = got
        else:
            assert got == [0o2755, 0o2500, 0o3750], [oct(x) for x in got]
    assert shown == got, [oct(x) for x in shown]


def test_mkdir_rmdir(vfs):
    d = vfs.p("d")
    os.mkdir(d, 0o750)
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o750
    expect_errno(errno.EEXIST, os.mkdir, d)
    write_file(vfs.p("f"), b"")
    expect_errno(errno.EEXIST, os.mkdir, vfs.p("f"))
    write_file(os.path.join(d, "x"), b"1")
    expect_errno(errno.ENOTEMPTY, os.rmdir, d)
    os.mkdir(os.path.join(d, "sub"))
    os.unlink(os.path.join(d, "x"))
    expect_errno(errno.ENOTEMPTY, os.rmdir, d)
    os.rmdir(os.path.join(d, "sub"))
    os.rmdir(d)
    expect_errno(errno.ENOENT, os.stat, d)
    expect_errno(errno.ENOENT, os.rmdir, d)
    expect_errno(errno.ENOTDIR, os.rmdir, vfs.p("f"))
    # re-creating after rmdir works and starts empty
    os.mkdir(d)
    assert os.listdir(d) == []
    os.rmdir(d)
    # nothing but the file's backing entry remains in the cipherdir
    assert len(util.backing_entries(vfs.cipherdir)) == 1
    # deep trees
    deep = vfs.mnt
    for i in range(20):
        deep = os.path.join(deep, "level%d" % i)
        os.mkdir(deep)
    write_file(os.path.join(deep, "leaf"), b"leaf")
    assert read_file(os.path.join(deep, "leaf")) == b"leaf"


def test_mknod_fifo_socket(vfs):
    os.mkfifo(vfs.p("fifo"), 0o600)
    st = os.lstat(vfs.p("fifo"))
    assert stat.S_ISFIFO(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o600
    os.mknod(vfs.p("sock"), stat.S_IFSOCK | 0o640)
    assert stat.S_ISSOCK(os.lstat(vfs.p("sock")).st_mode)
    # a unix socket bound inside the mount
    s = socket.socket(socket.AF_UNIX)
    try:
        path = vfs.p("bound")
        if len(os.fsencode(path)) < 100:
            s.bind(path)
            assert stat.S_ISSOCK(os.lstat(path).st_mode)
    finally:
        s.close()
    # a fifo works as a fifo (the data never touches the cipherdir)
    r = os.open(vfs.p("fifo"), os.O_RDONLY | os.O_NONBLOCK)
    w = os.open(vfs.p("fifo"), os.O_WRONLY)
    os.write(w, b"ping")
    assert os.read(r, 10) == b"ping"
    os.close(w)
    os.close(r)
    expect_errno(errno.EEXIST, os.mkfifo, vfs.p("fifo"))
    kinds = {e.name for e in os.scandir(vfs.mnt)}
    assert {"fifo", "sock"} <= kinds
    os.unlink(vfs.p("fifo"))
    os.unlink(vfs.p("sock"))


def test_unlink(vfs):
    write_file(vfs.p("f"), b"data")
    os.unlink(vfs.p("f"))
    expect_errno(errno.ENOENT, os.stat, vfs.p("f"))
    expect_errno(errno.ENOENT, os.unlink, vfs.p("f"))
    os.mkdir(vfs.p("d"))
    expect_errno(errno.EISDIR, os.unlink, vfs.p("d"))
    # the backing file is gone too
    assert len(util.backing_entries(vfs.cipherdir)) == 1
    os.rmdir(vfs.p("d"))
    assert util.backing_entries(vfs.cipherdir) == []


def test_unlink_open_file(vfs):
    data = util.rand_bytes(10000, 3)
    write_file(vfs.p("f"), data)
    fd = os.open(vfs.p("f"), os.O_RDWR)
    try:
        os.unlink(vfs.p("f"))
        expect_errno(errno.ENOENT, os.stat, vfs.p("f"))
        assert os.pread(fd, 20000, 0) == data
        os.pwrite(fd, b"NEW", 4095)
        assert os.pread(fd, 5, 4094) == data[4094:4095] + b"NEW" + \
            data[4098:4099]
    finally:
        os.close(fd)
    assert os.listdir(vfs.mnt) == []


def test_rename_basic(vfs):
    write_file(vfs.p("a"), b"A")
    os.rename(vfs.p("a"), vfs.p("b"))
    expect_errno(errno.ENOENT, os.stat, vfs.p("a"))
    assert read_file(vfs.p("b")) == b"A"
    # across directories, keeping content, mode and xattrs
    os.mkdir(vfs.p("d1"))
    os.mkdir(vfs.p("d2"))
    os.chmod(vfs.p("b"), 0o604)
    os.setxattr(vfs.p("b"), "user.k", b"v")
    os.rename(vfs.p("b"), vfs.p("d1", "b"))
    os.rename(vfs.p("d1", "b"), vfs.p("d2", "c"))
    assert read_file(vfs.p("d2", "c")) == b"A"
    assert stat.S_IMODE(os.stat(vfs.p("d2", "c")).st_mode) == 0o604
    assert os.getxattr(vfs.p("d2", "c"), "user.k") == b"v"
    # a renamed directory keeps its contents (and its IV)
    write_file(vfs.p("d1", "x"), b"xx")
    os.rename(vfs.p("d1"), vfs.p("d2", "moved"))
    assert read_file(vfs.p("d2", "moved", "x")) == b"xx"
    assert os.listdir(vfs.p("d2", "moved")) == ["x"]
    write_file(vfs.p("d2", "moved", "y"), b"yy")
    assert sorted(os.listdir(vfs.p("d2", "moved"))) == ["x", "y"]
    assert sorted(os.listdir(vfs.mnt)) == ["d2"]
    # rename to itself is a no-op
    os.rename(vfs.p("d2", "c"), vfs.p("d2", "c"))
    assert read_file(vfs.p("d2", "c")) == b"A"
    expect_errno(errno.ENOENT, os.rename, vfs.p("nope"), vfs.p("x"))
    # a directory cannot move below itself
    expect_errno(errno.EINVAL, os.rename, vfs.p("d2"),
                 vfs.p("d2", "moved", "d2"))


def test_rename_over_existing(vfs):
    write_file(vfs.p("a"), b"AAAA")
    write_file(vfs.p("b"), b"BBBBBBBB")
    os.rename(vfs.p("a"), vfs.p("b"))
    assert read_file(vfs.p("b")) == b"AAAA"
    assert os.stat(vfs.p("b")).st_size == 4
    assert os.listdir(vfs.mnt) == ["b"]
    # directory over an empty directory
    os.mkdir(vfs.p("d1"))
    write_file(vfs.p("d1", "in"), b"in")
    os.mkdir(vfs.p("d2"))
    os.rename(vfs.p("d1"), vfs.p("d2"))
    assert os.listdir(vfs.p("d2")) == ["in"]
    assert read_file(vfs.p("d2", "in")) == b"in"
    # directory over a non-empty directory
    os.mkdir(vfs.p("d3"))
    expect_errno((errno.ENOTEMPTY, errno.EEXIST), os.rename, vfs.p("d3"),
                 vfs.p("d2"))
    # file over directory and directory over file
    expect_errno(errno.EISDIR, os.rename, vfs.p("b"), vfs.p("d3"))
    expect_errno(errno.ENOTDIR, os.rename, vfs.p("d3"), vfs.p("b"))
    assert sorted(os.listdir(vfs.mnt)) == ["b", "d2", "d3"]


def test_renameat2_noreplace(vfs):
    write_file(vfs.p("a"), b"A")
    write_file(vfs.p("b"), b"B")
    expect_errno(errno.EEXIST, util.renameat2, vfs.p("a"), vfs.p("b"),
                 util.RENAME_NOREPLACE)
    assert read_file(vfs.p("a")) == b"A"
    assert read_file(vfs.p("b")) == b"B"
    util.renameat2(vfs.p("a"), vfs.p("c"), util.RENAME_NOREPLACE)
    assert sorted(os.listdir(vfs.mnt)) == ["b", "c"]
    assert read_file(vfs.p("c")) == b"A"


def test_renameat2_exchange(vfs):
    write_file(vfs.p("a"), b"AAA")
    os.mkdir(vfs.p("d"))
    write_file(vfs.p("d", "b"), b"B")
    util.renameat2(vfs.p("a"), vfs.p("d", "b"), util.RENAME_EXCHANGE)
    assert read_file(vfs.p("a")) == b"B"
    assert read_file(vfs.p("d", "b")) == b"AAA"
    # exchange a file and a directory
    write_file(vfs.p("d", "inner"), b"i")
    util.renameat2(vfs.p("a"), vfs.p("d"), util.RENAME_EXCHANGE)
    assert read_file(vfs.p("d")) == b"B"
    assert sorted(os.listdir(vfs.p("a"))) == ["b", "inner"]
    assert read_file(vfs.p("a", "inner")) == b"i"
    expect_errno(errno.ENOENT, util.renameat2, vfs.p("d"), vfs.p("zz"),
                 util.RENAME_EXCHANGE)


def test_rename_exdev(vfs, tmp_path):
    write_file(vfs.p("a"), b"A")
    outside = str(tmp_path / "outside")
    write_file(outside, b"O")
    expect_errno(errno.EXDEV, os.rename, vfs.p("a"), outside)
    expect_errno(errno.EXDEV, os.rename, outside, vfs.p("b"))
    expect_errno(errno.EXDEV, os.link, outside, vfs.p("b"))


def test_hard_links(vfs):
    a, b = vfs.p("a"), vfs.p("b")
    write_file(a, util.rand_bytes(5000, 1))
    os.mkdir(vfs.p("d"))
    os.link(a, b)
    os.link(a, vfs.p("d", "c"))
    sa, sb = os.stat(a), os.stat(b)
    assert sa.st_nlink == sb.st_nlink == 3
    assert sa.st_ino == sb.st_ino
    # write through one, read through the other
    with open(a, "r+b") as f:
        f.seek(4090)
        f.write(b"0123456789")
    want = bytearray(util.rand_bytes(5000, 1))
    want[4090:4100] = b"0123456789"
    assert read_file(b) == bytes(want)
    assert read_file(vfs.p("d", "c")) == bytes(want)
    # size changes are seen through every name
    with open(b, "ab") as f:
        f.write(b"tail" * 1000)
    assert os.stat(a).st_size == 9000
    os.truncate(vfs.p("d", "c"), 4097)
    assert os.stat(a).st_size == os.stat(b).st_size == 4097
    assert read_file(a) == bytes(want[:4097])
    # rename between two links of one inode does nothing (POSIX)
    os.rename(b, vfs.p("d", "c"))
    assert os.path.exists(b) and os.path.exists(vfs.p("d", "c"))
    assert os.stat(b).st_nlink == 3
    os.unlink(a)
    assert os.stat(b).st_nlink == 2
    assert read_file(b) == bytes(want[:4097])
    expect_errno(errno.EEXIST, os.link, b, vfs.p("d", "c"))
    expect_errno(errno.ENOENT, os.link, vfs.p("zz"), vfs.p("yy"))


def test_symlinks(vfs):
    targets = {
        "rel": "one.txt",
        "relup": "../x/y",
        "abs": "/a/b/c/d",
        "dots": "..",
        "long1000": "t" * 1000,
        "long3000": "/".join(["p" * 200] * 15),
        "utf8": "café/ü",
    }
    for name, t in targets.items():
        os.symlink(t, vfs.p(name))
    for name, t in targets.items():
        assert os.readlink(vfs.p(name)) == t
        st = os.lstat(vfs.p(name))
        assert stat.S_ISLNK(st.st_mode)
        assert st.st_size == len(t.encode())
    assert set(os.listdir(vfs.mnt)) == set(targets)
    # following a relative symlink inside the mount
    write_file(vfs.p("one.txt"), b"1")
    assert read_file(vfs.p("rel")) == b"1"
    expect_errno(errno.EEXIST, os.symlink, "x", vfs.p("rel"))
    expect_errno(errno.EINVAL, os.readlink, vfs.p("one.txt"))
    # symlink under a long name, rename and unlink it
    ln = vfs.p("L" * 230)
    os.symlink("one.txt", ln)
    assert os.readlink(ln) == "one.txt"
    os.rename(ln, vfs.p("short"))
    assert os.readlink(vfs.p("short")) == "one.txt"
    for name in targets:
        os.unlink(vfs.p(name))
    assert sorted(os.listdir(vfs.mnt)) == ["one.txt", "short"]
    # timestamps and xattr listing of the link itself
    os.utime(vfs.p("short"), ns=(10**18, 2 * 10**18), follow_symlinks=False)
    assert os.lstat(vfs.p("short")).st_mtime_ns == 2 * 10**18
    assert os.listxattr(vfs.p("short"), follow_symlinks=False) == []


def test_statfs(vfs):
    sv = os.statvfs(vfs.mnt)
    assert sv.f_bsize > 0
    assert sv.f_blocks > 0
    assert 0 <= sv.f_bavail <= sv.f_bfree <= sv.f_blocks
    back = os.statvfs(vfs.cipherdir)
    # same backing filesystem: the totals agree in bytes within 1%
    total = sv.f_blocks * sv.f_frsize
    btotal = back.f_blocks * back.f_frsize
    assert abs(total - btotal) <= btotal // 100


def test_xattrs(vfs):
    p = vfs.p("f")
    write_file(p, b"x")
    assert os.listxattr(p) == []
    expect_errno(errno.ENODATA, os.getxattr, p, "user.foo")
    os.setxattr(p, "user.foo", b"bar")
    os.setxattr(p, "user.empty", b"")
    big = util.rand_bytes(3000, 5)
    os.setxattr(p, "user.big", big)
    os.setxattr(p, "user." + "n" * 150, b"longname")
    assert os.getxattr(p, "user.foo") == b"bar"
    assert os.getxattr(p, "user.empty") == b""
    assert os.getxattr(p, "user.big") == big
    assert os.getxattr(p, "user." + "n" * 150) == b"longname"
    assert sorted(os.listxattr(p)) == sorted(
        ["user.foo", "user.empty", "user.big", "user." + "n" * 150])
    # flags
    expect_errno(errno.EEXIST, os.setxattr, p, "user.foo", b"x",
                 os.XATTR_CREATE)
    expect_errno(errno.ENODATA, os.setxattr, p, "user.none", b"x",
                 os.XATTR_REPLACE)
    os.setxattr(p, "user.foo", b"baz", os.XATTR_REPLACE)
    assert os.getxattr(p, "user.foo") == b"baz"
    os.removexattr(p, "user.foo")
    expect_errno(errno.ENODATA, os.getxattr, p, "user.foo")
    expect_errno(errno.ENODATA, os.removexattr, p, "user.foo")
    assert "user.foo" not in os.listxattr(p)
    # the backing file stores names and values encrypted
    back = util.only_backing_file(vfs.cipherdir)
    for name in os.listxattr(back):
        assert name.startswith("user.gocryptfs.")
        assert os.getxattr(back, name) != big
    # directories carry xattrs too
    os.mkdir(vfs.p("d"))
    os.setxattr(vfs.p("d"), "user.dirattr", b"xxxxxxxxxx")
    assert os.getxattr(vfs.p("d"), "user.dirattr") == b"xxxxxxxxxx"
    assert os.listxattr(vfs.p("d")) == ["user.dirattr"]
    # xattrs survive a rename
    os.rename(p, vfs.p("d", "g"))
    assert os.getxattr(vfs.p("d", "g"), "user.big") == big


def test_xattr_absence_is_never_stale(vfs):
    """The daemon remembers for a second that a file has no attributes
    (ls -l asks for two of every file); every set or remove, through any
    name of the file, must end that at once, also while other threads keep
    asking for absent attributes."""
    p = vfs.p("h")
    write_file(p, b"x")
    os.link(p, vfs.p("h2"))
    assert os.listxattr(p) == []
    expect_errno(errno.ENODATA, os.getxattr, vfs.p("h2"), "user.absent")
    os.setxattr(vfs.p("h2"), "user.a", b"1")
    assert os.getxattr(p, "user.a") == b"1"
    assert os.listxattr(p) == ["user.a"]
    os.removexattr(p, "user.a")
    assert os.listxattr(vfs.p("h2")) == []
    expect_errno(errno.ENODATA, os.getxattr, p, "user.a")
    os.setxattr(p, "user.b", b"2")
    assert os.getxattr(vfs.p("h2"), "user.b") == b"2"
    os.removexattr(p, "user.b")

    stop = threading.Event()
    errors = []

    def asker():
        while not stop.is_set():
            try:
                os.getxattr(p, "user.absent")
            except OSError as e:
                if e.errno != errno.ENODATA:
                    errors.append(e)
            os.listxattr(vfs.p("h2"))

    threads = [threading.Thread(target=asker) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for i in range(300):
            v = str(i).encode()
            os.setxattr(p, "user.k", v)
            assert os.getxattr(vfs.p("h2"), "user.k") == v, i
            assert "user.k" in os.listxattr(p), i
            os.removexattr(vfs.p("h2"), "user.k")
            expect_errno(errno.ENODATA, os.getxattr, p, "user.k")
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors


def test_xattrs_while_names_swap(vfs):
    """The daemon may read an object's attribute list by its backing name
    (one syscall instead of four): it must never answer for the object
    that name held a moment before. Two files swap names all the time
    while other threads ask each one, through its descriptor, for its
    attribute: A always has it, B never."""
    a, b, t = vfs.p("a"), vfs.p("b"), vfs.p("t")
    write_file(a, b"A")
    write_file(b, b"B")
    os.setxattr(a, "user.k", b"on a")
    fa = os.open(a, os.O_RDONLY)
    fb = os.open(b, os.O_RDONLY)
    stop = threading.Event()
    errors = []

    def swapper():
        while not stop.is_set():
            os.rename(a, t)
            os.rename(b, a)
            os.rename(t, b)

    def asker(fd, want):
        n = 0
        while not stop.is_set() or n < 200:
            n += 1
            try:
                got = os.getxattr(fd, "user.k")
            except OSError as e:
                got = e.errno
            if got != want:
                errors.append((want, got))
                return
            names = os.listxattr(fd)
            if names != (["user.k"] if want == b"on a" else []):
                errors.append((want, names))
                return
            # ls -l's question, answered the same way
            try:
                os.getxattr(fd, "system.posix_acl_access")
                errors.append("ACL found")
            except OSError as e:
                if e.errno != errno.ENODATA:
                    errors.append(e)

    threads = [threading.Thread(target=swapper)]
    threads += [threading.Thread(target=asker, args=(fd, want))
                for fd, want in [(fa, b"on a"), (fb, errno.ENODATA)] * 2]
    for th in threads:
        th.start()
    try:
        time.sleep(3)
    finally:
        stop.set()
        for th in threads:
            th.join()
        os.close(fa)
        os.close(fb)
    assert not errors, errors[:5]
    assert os.getxattr(a if read_file(a) == b"A" else b, "user.k") == b"on a"


def test_long_names(vfs):
    for n in (175, 176, 200, 255):
        name = vfs.p(("%d-" % n).ljust(n, "n"))
        write_file(name, b"%d" % n)
        assert read_file(name) == b"%d" % n
        assert os.stat(name).st_size == len(b"%d" % n)
    d = vfs.p("D" * 255)
    os.mkdir(d)
    write_file(os.path.join(d, "F" * 255), b"deep")
    assert os.listdir(d) == ["F" * 255]
    assert len(os.listdir(vfs.mnt)) == 5
    # rename between long and short names
    os.rename(vfs.p("200-".ljust(200, "n")), vfs.p("short"))
    os.rename(vfs.p("short"), vfs.p("S" * 254))
    os.rename(vfs.p("S" * 254), vfs.p("T" * 220))
    assert read_file(vfs.p("T" * 220)) == b"200"
    os.link(vfs.p("T" * 220), vfs.p("H" * 240))
    assert read_file(vfs.p("H" * 240)) == b"200"
    os.unlink(vfs.p("T" * 220))
    os.unlink(vfs.p("H" * 240))
    os.unlink(os.path.join(d, "F" * 255))
    os.rmdir(d)
    for n in (175, 176, 255):
        os.unlink(vfs.p(("%d-" % n).ljust(n, "n")))
    assert os.listdir(vfs.mnt) == []
    # no sidecar .name files are left behind
    assert util.backing_entries(vfs.cipherdir) == []


def test_name_too_long(vfs):
    n256 = vfs.p("x" * 256)
    expect_errno(errno.ENAMETOOLONG, os.open, n256,
                 os.O_CREAT | os.O_WRONLY, 0o644)
    expect_errno(errno.ENAMETOOLONG, os.mkdir, n256)
    expect_errno(errno.ENAMETOOLONG, os.stat, n256)
    expect_errno(errno.ENAMETOOLONG, os.symlink, "t", n256)
    write_file(vfs.p("ok"), b"")
    expect_errno(errno.ENAMETOOLONG, os.rename, vfs.p("ok"), n256)
    expect_errno(errno.ENAMETOOLONG, os.link, vfs.p("ok"), n256)
    assert os.listdir(vfs.mnt) == ["ok"]


@pytest.mark.skipif(os.getuid() != 0, reason="needs root")
def test_plaintextnames_reserved_config(mounter):
    """With -plaintextnames, gocryptfs.conf in the root is reserved."""
    cipherdir = mounter.init(["-gcm", "-plaintextnames"])
    m = mounter.mount(cipherdir)
    assert os.listdir(m.mnt) == []
    expect_errno(errno.EPERM, os.open, m.p("gocryptfs.conf"),
                 os.O_CREAT | os.O_WRONLY, 0o644)
    expect_errno((errno.EPERM, errno.ENOENT), os.stat,
                 m.p("gocryptfs.conf"))
    # an ordinary name below the root
    os.mkdir(m.p("d"))
    write_file(m.p("d", "gocryptfs.conf"), b"mine")
    assert read_file(m.p("d", "gocryptfs.conf")) == b"mine"


def test_big_xattr_value(mounter, tmp_path):
    """A value larger than the daemon's first, small read of it (ext4
    keeps at most one block of attributes, so the cipherdir is on a
    tmpfs)."""
    with util.tmpfs(tmp_path, "16m") as d:
        m = mounter.mount(mounter.init(cipherdir=os.path.join(d, "c")))
        p = m.p("f")
        write_file(p, b"x")
        for size in (4000, 4097, 20000, 60000):
            v = util.rand_bytes(size, size)
            os.setxattr(p, "user.v%d" % size, v)
            assert os.getxattr(p, "user.v%d" % size) == v
        mounter.unmount(m)


def test_getxattr_of_a_name_too_long_once_encrypted(vfs):
    """A user.* name whose encrypted form is longer than any backing
    filesystem allows (255 bytes) cannot exist: getxattr answers ENODATA,
    also to a size query (it answered ERANGE, "buffer too small", so that
    a caller that retries with a bigger buffer never found an end)."""
    if vfs.variant == "plaintextnames":
        pytest.skip("xattr names are encrypted in every mode; one suffices")
    f = vfs.p("f")
    write_file(f, b"")
    os.setxattr(f, "user.x", b"1")
    name = "user." + "a" * 200
    for size in (0, 100, 70000):
        expect_errno(errno.ENODATA, _getxattr_size, f, name, size)


def _getxattr_size(path, name, size):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(max(size, 1))
    n = libc.getxattr(path.encode(), name.encode(), buf if size else None,
                      ctypes.c_size_t(size))
    if n < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return n


def test_file_beyond_the_largest_backing_file(mounter, tmp_path):
    """A write, truncate or fallocate whose ciphertext would end beyond
    what off_t addresses answers EFBIG, as gocryptfs does (it answered
    EINVAL, the backing call's answer to a negative offset), and leaves
    the file as it was. On a tmpfs: ext4 refuses such sizes itself."""
    with util.tmpfs(tmp_path, "16m") as d:
        m = mounter.mount(mounter.init(cipherdir=os.path.join(d, "c")))
        p = m.p("f")
        write_file(p, b"kept")
        fd = os.open(p, os.O_RDWR)
        try:
            expect_errno(errno.EFBIG, os.pwrite, fd, b"x" * 10,
                         (1 << 63) - 4096 * 200)
            expect_errno(errno.EFBIG, os.ftruncate, fd, (1 << 63) - 100)
            expect_errno(errno.EFBIG, os.posix_fallocate, fd,
                         (1 << 63) - 4096 * 200, 4096)
            # the largest file that fits is a sparse file like any other
            os.ftruncate(fd, 1 << 60)
            assert os.fstat(fd).st_size == 1 << 60
            os.ftruncate(fd, 4)
        finally:
            os.close(fd)
        assert read_file(p) == b"kept"
        mounter.unmount(m)
