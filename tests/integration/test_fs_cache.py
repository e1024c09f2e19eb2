# SPDX-License-Identifier: MIT
"""What the kernel caches for a forward mount never goes stale (issue #18).

Forward mode lets the kernel keep names, negative lookups and attributes
for an hour, a file's pages across opens while the backing file is as the
last handle left it, and directory listings across opens. That is correct
only because veilfs is the only writer of its cipherdir and every change
goes through the kernel, which must then update or drop what it cached of
every name and inode involved. Each test here warms every cache first (the
attributes of every name, a file's pages through every name and handle,
listings, negative entries), makes one change through one name or handle,
and checks at once, without sleeping, through every other one; where the
change must be on disk too, again after a remount. The oracle for
attributes is the backing object itself (assert_fresh): what a mount shows
must be what the cipherdir holds at that moment.

-sharedstorage caches nothing: two mounts of one cipherdir see each other's
changes at once. Reverse mode caches for a second: a new plaintext file
shows within a few seconds. A change to the cipherdir behind a forward
mount's back is not supported; test_backing_replaced_behind_the_back says
what a user sees then, and test_caches_are_in_effect checks that the
attribute cache these tests exercise is really there.
"""

import errno
import os
import shutil
import stat
import time

import pytest

import util
from util import expect_errno, read_file, write_file

ROOT = os.getuid() == 0
T1 = 1_100_000_000_123_456_789
T2 = 1_200_000_000_987_654_321
LONG = "L" * 200  # long once encrypted: the cipherdir keeps a .name sidecar
LONG2 = "M" * 220
# Attributes the mount shows as the backing object has them.
SHOWN = ("st_ino", "st_mode", "st_nlink", "st_uid", "st_gid", "st_mtime_ns",
         "st_ctime_ns")


# --- helpers -----------------------------------------------------------------

def kind(path):
    """The kind of what PATH names (lstat)."""
    return {stat.S_IFREG: "file", stat.S_IFDIR: "dir", stat.S_IFLNK: "link",
            stat.S_IFIFO: "fifo"}[stat.S_IFMT(os.lstat(path).st_mode)]


def kinds(path):
    """{name: kind} of a directory as os.scandir tells it from d_type."""
    out = {}
    for e in os.scandir(path):
        if e.is_symlink():
            out[e.name] = "link"
        elif e.is_dir(follow_symlinks=False):
            out[e.name] = "dir"
        elif e.is_file(follow_symlinks=False):
            out[e.name] = "file"
        else:
            out[e.name] = "fifo"  # the only other kind the tests make
    return out


def warm(*paths):
    """Fill what the kernel caches for each path: its entry and attributes
    (for a missing name: the negative entry), a file's pages, a symlink's
    target, a directory's listing (twice: the second one comes from the
    kernel's copy), and the daemon's "no attributes" answer. The stat
    comes last: a read from the daemon makes the kernel's atime stale,
    and with it the attributes it would otherwise answer from its
    cache."""
    for p in paths:
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            continue
        if stat.S_ISREG(st.st_mode):
            read_file(p)
        elif stat.S_ISLNK(st.st_mode):
            os.readlink(p)
        elif stat.S_ISDIR(st.st_mode):
            os.listdir(p)
            kinds(p)
        if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
            os.listxattr(p)
    for p in paths:
        try:
            os.lstat(p)
        except FileNotFoundError:
            pass


def fd_data(fd):
    """Everything an open file descriptor reads, from offset 0."""
    out = b""
    while True:
        b = os.pread(fd, 65536, len(out))
        if not b:
            return out
        out += b


def backing(m, ino):
    """A backing path of the object with inode number INO, or None."""
    if os.lstat(m.cipherdir).st_ino == ino:
        return m.cipherdir
    for dirpath, dirnames, filenames in os.walk(m.cipherdir):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            if os.lstat(p).st_ino == ino:
                return p
    return None


def assert_fresh(m, *paths, fds=()):
    """What the mount shows of each path (lstat) and open file (fstat) is
    what the backing object holds now: nothing the kernel kept is stale."""
    shown = [(p, os.lstat(p)) for p in paths]
    shown += [("fd %d" % fd, os.fstat(fd)) for fd in fds]
    for what, st in shown:
        root = what == m.mnt  # gocryptfs numbers its root itself
        b = m.cipherdir if root else backing(m, st.st_ino)
        assert b is not None, "%s: inode %d is no backing object" % (
            what, st.st_ino)
        bst = os.lstat(b)
        got = {a: getattr(st, a) for a in SHOWN}
        want = {a: getattr(bst, a) for a in SHOWN}
        if root and util.is_gocryptfs(m.binary):
            got["st_ino"] = want["st_ino"]
        assert got == want, "%s: stale attributes" % what
        if stat.S_ISREG(st.st_mode):
            assert st.st_size == util.plain_size(bst.st_size, m.overhead), \
                "%s: stale size" % what


def daemon_holds(m, back):
    """Whether the daemon of M has the backing file BACK open."""
    st = os.lstat(back)
    fds = "/proc/%d/fd" % m.proc.pid
    for n in os.listdir(fds):
        try:
            fst = os.stat(os.path.join(fds, n))
        except FileNotFoundError:
            continue
        if (fst.st_dev, fst.st_ino) == (st.st_dev, st.st_ino):
            return True
    return False


def assert_file(path, data, fd=None):
    """PATH (and the open FD, if any) reads DATA and says its size."""
    assert os.stat(path).st_size == len(data), path
    assert read_file(path) == data, path
    if fd is not None:
        assert os.fstat(fd).st_size == len(data), path
        assert fd_data(fd) == data, path


def remount(mounter, m, args=None):
    """Unmount M (the daemon must exit cleanly) and mount its cipherdir
    again: every cache starts cold."""
    mounter.unmount(m)
    n = mounter.mount(m.cipherdir, args=args, label=m.label)
    for k in ("variant", "overhead", "plaintextnames"):
        setattr(n, k, getattr(m, k))
    return n


def sidecars(m):
    """How many long-name sidecars the cipherdir holds."""
    return sum(n.endswith(".name") for _, _, fns in os.walk(m.cipherdir)
               for n in fns)


def eventually(check, what, seconds=5):
    """Poll CHECK until it holds (at most SECONDS, scaled for slow
    builds): for what comes asynchronously (the kernel's RELEASE after
    close) or after a short cache timeout (reverse mode)."""
    deadline = time.monotonic() + seconds * util.SLOW
    while not check():
        assert time.monotonic() < deadline, "%s: not within %ds" % (
            what, seconds)
        time.sleep(0.05)


CHANGES = ["pwrite", "append", "shrink", "grow", "o_trunc", "o_trunc_hole",
           "o_trunc_hole_utime", "fallocate", "fallocate_hole_utime"]


def change_file(p, change, want):
    """Change the file P through the mount (its own descriptor, closed
    again) the way CHANGE says; returns the data it must hold then."""
    want = bytearray(want)
    if change == "pwrite":
        with open(p, "r+b") as f:
            f.seek(5000)
            f.write(b"P" * 100)
        want += bytes(max(0, 5000 - len(want)))
        want[5000:5100] = b"P" * 100
    elif change == "append":
        with open(p, "ab") as f:
            f.write(b"A" * 3000)
        want += b"A" * 3000
    elif change == "shrink":
        os.truncate(p, 4095)
        del want[4095:]
    elif change == "grow":
        os.truncate(p, 20000)
        want += bytes(20000 - len(want))
    elif change == "o_trunc":
        with open(p, "wb") as f:
            f.write(b"short")
        want = bytearray(b"short")
    elif change == "fallocate":
        fd = os.open(p, os.O_WRONLY)
        try:
            util.fallocate(fd, 0, len(want), 5000)
        finally:
            os.close(fd)
        want += bytes(5000)
    else:
        # a sparse rewrite, as cp --sparse or a download does: O_TRUNC,
        # bytes beyond a hole (or fallocate), maybe the mtime restored
        fd = os.open(p, os.O_WRONLY | os.O_TRUNC)
        try:
            if change.startswith("fallocate"):
                util.fallocate(fd, 0, 0, 12000)
                want = bytearray(12000)
            else:
                os.pwrite(fd, b"B" * 10, 12000)
                want = bytearray(12000) + b"B" * 10
            if change.endswith("utime"):
                os.utime(fd, ns=(T1, T2))
        finally:
            os.close(fd)
    return bytes(want)


# --- hard links --------------------------------------------------------------

def _linked(m, size=10000):
    """A file with two names in two directories; returns both and its
    data."""
    os.mkdir(m.p("d"))
    a, b = m.p("a"), m.p("d", "b")
    data = util.rand_bytes(size, size)
    write_file(a, data)
    os.link(a, b)
    return a, b, data


def test_hard_link_data(vfs, mounter):
    """Writes, appends, truncates and fallocate through one name show
    through the other name and a descriptor open on it, at once."""
    a, b, data = _linked(vfs)
    want = data
    fd = os.open(b, os.O_RDONLY)
    try:
        fd_data(fd)
        for via, change in [(a, "pwrite"), (b, "append"), (a, "shrink"),
                            (b, "grow"), (a, "o_trunc"), (b, "pwrite"),
                            (a, "fallocate"), (b, "o_trunc_hole_utime"),
                            (a, "append")]:
            warm(a, b, vfs.p("d"))
            want = change_file(via, change, want)
            for p in (a, b):
                assert_file(p, want, fd)
            assert_fresh(vfs, a, b, fds=[fd])
    finally:
        os.close(fd)
    m = remount(mounter, vfs)
    assert_file(m.p("a"), want)
    assert_file(m.p("d", "b"), want)


def test_hard_link_metadata(vfs, mounter):
    """chmod, chown, utimens and xattrs through one name show through the
    other at once; both names always show the same inode."""
    a, b, _ = _linked(vfs)
    warm(a, b)
    expect_errno(errno.ENODATA, os.getxattr, a, "user.k")
    expect_errno(errno.ENODATA, os.getxattr, b, "user.k")
    os.chmod(a, 0o604)
    assert stat.S_IMODE(os.stat(b).st_mode) == 0o604
    assert_fresh(vfs, a, b)
    if ROOT:
        os.chown(b, 1234, 5678)
        assert (os.stat(a).st_uid, os.stat(a).st_gid) == (1234, 5678)
        assert_fresh(vfs, a, b)
    os.utime(a, ns=(T1, T2))
    assert (os.stat(b).st_atime_ns, os.stat(b).st_mtime_ns) == (T1, T2)
    assert_fresh(vfs, a, b)
    os.setxattr(b, "user.k", b"v1")
    assert os.getxattr(a, "user.k") == b"v1"
    assert os.listxattr(a) == ["user.k"]
    assert_fresh(vfs, a, b)
    os.setxattr(a, "user.k", b"v2", os.XATTR_REPLACE)
    assert os.getxattr(b, "user.k") == b"v2"
    os.removexattr(b, "user.k")
    expect_errno(errno.ENODATA, os.getxattr, a, "user.k")
    assert os.listxattr(a) == []
    assert_fresh(vfs, a, b)
    os.setxattr(a, "user.k", b"v3")
    m = remount(mounter, vfs)
    for p in (m.p("a"), m.p("d", "b")):
        st = os.stat(p)
        assert stat.S_IMODE(st.st_mode) == 0o604
        assert st.st_mtime_ns == T2
        assert os.getxattr(p, "user.k") == b"v3"
        if ROOT:
            assert (st.st_uid, st.st_gid) == (1234, 5678)


def test_hard_link_counts(vfs, mounter):
    """link() raises the count every name shows, unlink and a rename over
    one name lower it, at once."""
    a, b, data = _linked(vfs)
    c = vfs.p("c")
    warm(a, b, c, vfs.mnt, vfs.p("d"))
    assert os.stat(a).st_nlink == os.stat(b).st_nlink == 2
    os.link(b, c)
    for p in (a, b, c):
        assert os.stat(p).st_nlink == 3, p
    assert_fresh(vfs, a, b, c, vfs.mnt, vfs.p("d"))
    warm(a, b, c)
    os.unlink(a)
    expect_errno(errno.ENOENT, os.stat, a)
    assert os.stat(b).st_nlink == os.stat(c).st_nlink == 2
    assert_fresh(vfs, b, c, vfs.mnt)
    warm(a, b, c)
    write_file(vfs.p("x"), b"replacement")
    os.rename(vfs.p("x"), c)
    assert os.stat(b).st_nlink == 1
    assert os.stat(c).st_nlink == 1
    assert read_file(c) == b"replacement"
    assert_file(b, data)
    assert_fresh(vfs, b, c, vfs.mnt)
    assert sorted(os.listdir(vfs.mnt)) == ["c", "d"]
    m = remount(mounter, vfs)
    assert os.stat(m.p("d", "b")).st_nlink == 1
    assert read_file(m.p("d", "b")) == data
    assert read_file(m.p("c")) == b"replacement"


def _many_names(m, n):
    """N names d/l0..d/lN-1 of one 100-byte file, each looked up."""
    os.mkdir(m.p("d"))
    names = [m.p("d", "l%d" % i) for i in range(n)]
    write_file(names[0], b"x" * 100)
    for p in names[1:]:
        os.link(names[0], p)
    warm(*names)
    return names


def test_more_links_than_the_daemon_remembers(vfs):
    """A file with a dozen names: after the most recent ten are removed,
    the first two still show the file as it is (the daemon once kept only
    eight names per inode)."""
    names = _many_names(vfs, 12)
    for p in names[:1:-1]:  # the most recently made ones
        os.unlink(p)
    assert sorted(os.listdir(vfs.p("d"))) == ["l0", "l1"]
    with open(names[1], "ab") as f:
        f.write(b"y" * 5000)
    for p in names[:2]:
        assert os.stat(p).st_nlink == 2, p
        assert_file(p, b"x" * 100 + b"y" * 5000)
    os.setxattr(names[0], "user.k", b"v")
    assert os.getxattr(names[1], "user.k") == b"v"
    assert_fresh(vfs, *names[:2])
    assert os.stat(names[0]).st_ino == os.stat(names[1]).st_ino


def test_a_name_the_kernel_kept_after_every_other_name_went(vfs):
    """A file with many names: the names the kernel still holds show the
    file as it is after every other name was removed, the file closed and
    appended to through another name (the daemon once forgot names beyond
    eight and then took the file for a new one)."""
    names = _many_names(vfs, 40)
    fd = os.open(names[1], os.O_RDONLY)
    try:
        for p in names[2:]:
            os.unlink(p)
        assert os.fstat(fd).st_nlink == 2
    finally:
        os.close(fd)
    with open(names[0], "ab") as f:
        f.write(b"y" * 5000)
    for p in names[:2]:
        assert os.stat(p).st_size == 5100, p
        assert os.stat(p).st_nlink == 2, p
        assert_file(p, b"x" * 100 + b"y" * 5000)
    assert os.stat(names[0]).st_ino == os.stat(names[1]).st_ino
    assert_fresh(vfs, *names[:2])
    fd = os.open(names[1], os.O_PATH)
    try:
        os.unlink(names[0])
        assert os.fstat(fd).st_nlink == 1
        assert os.fstat(fd).st_size == 5100
    finally:
        os.close(fd)
    assert_file(names[1], b"x" * 100 + b"y" * 5000)


# --- rename over a file ------------------------------------------------------

def test_rename_over_file(vfs, mounter):
    """The replaced file's other name sees its count drop, a descriptor
    open on it still reads it, the new name shows the moved file, the old
    name is gone; then the replaced file loses its last name too."""
    x, x2, y = vfs.p("x"), vfs.p("d", "x2"), vfs.p(LONG)
    xdata, ydata = util.rand_bytes(5000, 1), util.rand_bytes(9000, 2)
    os.mkdir(vfs.p("d"))
    write_file(x, xdata)
    os.link(x, x2)
    write_file(y, ydata)
    xino, yino = os.stat(x).st_ino, os.stat(y).st_ino
    fd = os.open(x, os.O_RDONLY)
    try:
        assert fd_data(fd) == xdata
        warm(x, x2, y, vfs.mnt, vfs.p("d"))
        os.rename(y, x)
        assert os.stat(x).st_ino == yino
        assert_file(x, ydata)
        expect_errno(errno.ENOENT, os.stat, y)
        expect_errno(errno.ENOENT, read_file, y)
        assert os.stat(x2).st_ino == xino
        assert os.stat(x2).st_nlink == 1
        assert_file(x2, xdata, fd)
        assert sorted(os.listdir(vfs.mnt)) == ["d", "x"]
        assert_fresh(vfs, x, x2, vfs.mnt, fds=[fd])
        # the last name of the open file goes: it lives on through fd
        warm(x, x2, vfs.p("d"))
        os.rename(x, x2)
        assert os.fstat(fd).st_nlink == 0
        assert fd_data(fd) == xdata
        assert os.stat(x2).st_ino == yino
        assert_file(x2, ydata)
        expect_errno(errno.ENOENT, os.stat, x)
        assert os.listdir(vfs.mnt) == ["d"]
        assert os.listdir(vfs.p("d")) == ["x2"]
        assert_fresh(vfs, x2, vfs.mnt, vfs.p("d"))
    finally:
        os.close(fd)
    m = remount(mounter, vfs)
    assert os.listdir(m.mnt) == ["d"]
    assert_file(m.p("d", "x2"), ydata)
    if not m.plaintextnames:
        assert sidecars(m) == 0


# --- negative entries --------------------------------------------------------

def _make(m, way, path):
    """Create PATH the way WAY says; returns the kind it must show. The
    ways "link" and "rename" take the file m.p("src", "f")."""
    src = m.p("src", "f")
    if way == "open":
        fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o640)
        os.write(fd, b"made by open")
        os.close(fd)
        return "file"
    if way == "mkdir":
        os.mkdir(path)
        return "dir"
    if way == "symlink":
        os.symlink("target of " + os.path.basename(path)[:8], path)
        return "link"
    if way == "mknod":
        os.mknod(path, stat.S_IFIFO | 0o600)
        return "fifo"
    if way == "link":
        os.link(src, path)
        return "file"
    assert way == "rename"
    os.rename(src, path)
    return "file"


def _unmake(path):
    if kind(path) == "dir":
        os.rmdir(path)
    else:
        os.unlink(path)


WAYS = ["open", "mkdir", "symlink", "mknod", "link", "rename"]


@pytest.mark.parametrize("way", WAYS)
def test_negative_entry_then_create(vfs, mounter, way):
    """A name looked up while absent (the kernel remembers that) shows at
    once when it is created, by each way there is, and in the listing."""
    os.mkdir(vfs.p("src"))
    made = {}
    for name in ("new", LONG):
        p = vfs.p(name)
        if way in ("link", "rename"):
            write_file(vfs.p("src", "f"), b"source file")
            src_ino = os.stat(vfs.p("src", "f")).st_ino
        warm(vfs.mnt, vfs.p("src"), vfs.p("src", "f"))
        for _ in range(2):
            expect_errno(errno.ENOENT, os.lstat, p)
        expect_errno(errno.ENOENT, os.lstat, os.path.join(p, "child"))
        k = _make(vfs, way, p)
        made[name] = k
        assert kind(p) == k
        assert kinds(vfs.mnt) == dict(made, src="dir")
        assert sorted(os.listdir(vfs.mnt)) == sorted(list(made) + ["src"])
        if way == "open":
            assert read_file(p) == b"made by open"
        elif way == "mkdir":
            assert os.listdir(p) == []
        elif way == "symlink":
            assert os.readlink(p) == "target of " + name[:8]
        elif way in ("link", "rename"):
            assert os.stat(p).st_ino == src_ino
            assert read_file(p) == b"source file"
        if way == "link":
            assert os.stat(vfs.p("src", "f")).st_nlink == 2
            os.unlink(vfs.p("src", "f"))
        if way == "rename":
            expect_errno(errno.ENOENT, os.stat, vfs.p("src", "f"))
        assert os.listdir(vfs.p("src")) == []
        assert_fresh(vfs, p, vfs.mnt, vfs.p("src"))
    m = remount(mounter, vfs)
    assert kinds(m.mnt) == dict(made, src="dir")


def test_name_recreated_with_another_kind(vfs, mounter):
    """A name deleted and made again as another kind of object shows the
    new kind at once, by stat, in d_type and in the listing."""
    os.mkdir(vfs.p("src"))
    for name in ("n", LONG):
        p = vfs.p(name)
        for way in ("open", "mkdir", "symlink", "mknod", "mkdir", "open",
                    "symlink", "rename", "mknod"):
            if way == "rename":
                write_file(vfs.p("src", "f"), b"source file")
            k = _make(vfs, way, p)
            assert kind(p) == k, way
            assert kinds(vfs.mnt)[name] == k, way
            assert_fresh(vfs, p, vfs.mnt)
            warm(p, vfs.mnt)
            _unmake(p)
            expect_errno(errno.ENOENT, os.lstat, p)
            assert name not in kinds(vfs.mnt)
        _make(vfs, "mkdir", p)
    m = remount(mounter, vfs)
    assert kinds(m.mnt) == {"n": "dir", LONG: "dir", "src": "dir"}


def test_reused_inode_number(vfs):
    """The backing filesystem gives a freed inode number to the next new
    object (ext4 does at once); while the kernel still holds the old
    object (an O_PATH descriptor keeps it), a new one of the same name
    and number is another object: it shows its own symlink target, its
    own (empty) listing and takes entries, and reads its own bytes."""
    reused = set()
    for i in range(40):
        for k in ("link", "dir", "file"):
            p = vfs.p(k)
            if k == "link":
                os.symlink("old%d" % i, p)
            elif k == "dir":
                os.mkdir(p)
                write_file(os.path.join(p, "old"), b"old")
            else:
                write_file(p, b"old%d" % i)
            warm(p)
            if k == "file":  # its backing inode is freed after this
                back = backing(vfs, os.lstat(p).st_ino)
                eventually(lambda: not daemon_holds(vfs, back),
                           "the daemon's RELEASE")
            pin = os.open(p, os.O_PATH | os.O_NOFOLLOW)
            try:
                ino = os.fstat(pin).st_ino
                if k == "dir":
                    os.unlink(os.path.join(p, "old"))
                _unmake(p)
                if k == "link":
                    os.symlink("new%d" % i, p)
                elif k == "dir":
                    os.mkdir(p)
                else:
                    write_file(p, b"new%d" % i)
                if os.lstat(p).st_ino == ino:
                    reused.add(k)
                if k == "link":
                    assert os.readlink(p) == "new%d" % i
                elif k == "dir":
                    assert os.listdir(p) == []
                    write_file(os.path.join(p, "new"), b"new")
                    assert os.listdir(p) == ["new"]
                    os.unlink(os.path.join(p, "new"))
                else:
                    assert read_file(p) == b"new%d" % i
                assert_fresh(vfs, p)
            finally:
                os.close(pin)
            _unmake(p)
        if len(reused) == 3:
            break
    if not reused:
        pytest.skip("the backing filesystem never reused an inode number")


def test_rename_exchange(vfs, mounter):
    """RENAME_EXCHANGE of a directory and a file in another directory:
    each name shows the other object at once, and what is below them."""
    a, b = vfs.p("a"), vfs.p("o", LONG)
    os.mkdir(a)
    os.mkdir(vfs.p("o"))
    write_file(os.path.join(a, "x"), b"inside")
    write_file(b, b"a file")
    aino, bino = os.stat(a).st_ino, os.stat(b).st_ino
    warm(a, b, os.path.join(a, "x"), vfs.mnt, vfs.p("o"))
    expect_errno(errno.ENOTDIR, os.stat, os.path.join(b, "x"))
    util.renameat2(a, b, util.RENAME_EXCHANGE)
    assert (kind(a), kind(b)) == ("file", "dir")
    assert (os.stat(a).st_ino, os.stat(b).st_ino) == (bino, aino)
    assert read_file(a) == b"a file"
    assert read_file(os.path.join(b, "x")) == b"inside"
    expect_errno(errno.ENOTDIR, os.stat, os.path.join(a, "x"))
    assert kinds(vfs.mnt) == {"a": "file", "o": "dir"}
    assert kinds(vfs.p("o")) == {LONG: "dir"}
    assert_fresh(vfs, a, b, vfs.mnt, vfs.p("o"))
    m = remount(mounter, vfs)
    assert read_file(m.p("a")) == b"a file"
    assert read_file(m.p("o", LONG, "x")) == b"inside"


# --- unlink of an open file --------------------------------------------------

def test_unlink_open_file(vfs, mounter):
    """An unlinked open file lives on through its descriptor (link count
    0, reads and writes work); its name is gone, and a new file of that
    name is another file."""
    p = vfs.p("f")
    data = bytearray(util.rand_bytes(10000, 3))
    write_file(p, bytes(data))
    fd = os.open(p, os.O_RDWR)
    try:
        ino = os.fstat(fd).st_ino
        assert fd_data(fd) == data
        warm(p, vfs.mnt)
        os.unlink(p)
        assert os.fstat(fd).st_nlink == 0
        expect_errno(errno.ENOENT, os.stat, p)
        assert os.listdir(vfs.mnt) == []
        assert fd_data(fd) == data
        os.pwrite(fd, b"NEW", 4094)
        data[4094:4097] = b"NEW"
        os.pwrite(fd, b"end", 12000)
        data += bytes(12000 - len(data)) + b"end"
        assert fd_data(fd) == data
        assert os.fstat(fd).st_size == len(data)
        os.fchmod(fd, 0o600)
        assert stat.S_IMODE(os.fstat(fd).st_mode) == 0o600
        write_file(p, b"another file")
        assert os.stat(p).st_ino != ino
        assert_file(p, b"another file")
        assert fd_data(fd) == data
        assert os.listdir(vfs.mnt) == ["f"]
        assert_fresh(vfs, p, vfs.mnt)
    finally:
        os.close(fd)
    m = remount(mounter, vfs)
    assert os.listdir(m.mnt) == ["f"]
    assert read_file(m.p("f")) == b"another file"


def test_xattrs_of_unlinked_open_file(vfs):
    """The attributes of an unlinked open file, through its descriptor,
    as on any local filesystem."""
    p = vfs.p("f")
    write_file(p, b"x")
    fd = os.open(p, os.O_RDWR)
    try:
        os.setxattr(fd, "user.k", b"before")
        os.unlink(p)
        assert os.getxattr(fd, "user.k") == b"before"
        os.setxattr(fd, "user.k", b"after")
        assert os.listxattr(fd) == ["user.k"]
        assert os.getxattr(fd, "user.k") == b"after"
    finally:
        os.close(fd)


# --- truncate, setattr and writes through another name or handle -------------

TRUNC_SIZES = [8193, 8192, 8191, 4097, 4096, 4095, 1, 0, 4095, 4096, 4097,
               12289, 100, 9000]


@pytest.mark.parametrize("how", ["truncate", "ftruncate"])
def test_truncate_seen_everywhere(cvfs, how):
    """truncate(2) by path, or ftruncate(2) through one descriptor, shrinks
    and grows a file across block edges; another descriptor with the
    file's pages cached, and another hard link, show the new size and
    bytes (zeros where it grew) at once."""
    p, q = cvfs.p("f"), cvfs.p("hl")
    data = util.rand_bytes(3 * 4096 + 100, 5)
    write_file(p, data)
    os.link(p, q)
    want = data
    w = os.open(p, os.O_RDWR)
    r = os.open(q, os.O_RDONLY)
    try:
        for n in TRUNC_SIZES:
            assert fd_data(r) == want
            warm(p, q)
            if how == "truncate":
                os.truncate(p, n)
            else:
                os.ftruncate(w, n)
            want = want[:n] + bytes(max(0, n - len(want)))
            assert os.fstat(r).st_size == n, n
            assert fd_data(r) == want, n
            assert_file(q, want, w)
            assert_fresh(cvfs, p, q, fds=[r, w])
    finally:
        os.close(r)
        os.close(w)


def test_setattr_through_another_handle(vfs, mounter):
    """fchmod, fchown and futimens through one descriptor: stat by path
    and fstat of another descriptor show them at once."""
    p = vfs.p("f")
    write_file(p, b"data")
    a = os.open(p, os.O_RDWR)
    b = os.open(p, os.O_RDONLY)
    try:
        for fd in (a, b):
            os.fstat(fd)
        warm(p)
        os.fchmod(a, 0o751)
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o751
        assert stat.S_IMODE(os.fstat(b).st_mode) == 0o751
        if ROOT:
            os.fchown(a, 1234, 5678)
            assert (os.stat(p).st_uid, os.stat(p).st_gid) == (1234, 5678)
            assert (os.fstat(b).st_uid, os.fstat(b).st_gid) == (1234, 5678)
        os.utime(a, ns=(T1, T2))
        assert (os.stat(p).st_atime_ns, os.stat(p).st_mtime_ns) == (T1, T2)
        assert os.fstat(b).st_mtime_ns == T2
        os.fchmod(b, 0o640)  # the owner may, on a read-only descriptor
        assert stat.S_IMODE(os.fstat(a).st_mode) == 0o640
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o640
        assert_fresh(vfs, p, fds=[a, b])
    finally:
        os.close(a)
        os.close(b)
    m = remount(mounter, vfs)
    st = os.stat(m.p("f"))
    assert (stat.S_IMODE(st.st_mode), st.st_mtime_ns) == (0o640, T2)
    if ROOT:
        assert (st.st_uid, st.st_gid) == (1234, 5678)


def test_writes_seen_by_other_handles(cvfs):
    """A write through one descriptor shows through another open one
    (bytes and size) and through a fresh open, while descriptors stay open
    and after they are all closed (pages kept across opens)."""
    p = cvfs.p("f")
    want = bytearray(b"a" * 8192)
    write_file(p, bytes(want))
    b = os.open(p, os.O_RDONLY)
    a = os.open(p, os.O_WRONLY)
    try:
        assert fd_data(b) == want
        for off, chunk in [(4090, b"x" * 10), (8192, b"grown" * 1000),
                           (0, b"head"), (20000, b"far")]:
            os.pwrite(a, chunk, off)
            want += bytes(max(0, off - len(want)))
            want[off:off + len(chunk)] = chunk
            assert os.fstat(b).st_size == len(want)
            assert fd_data(b) == want
            assert read_file(p) == want  # a fresh open, others still open
            assert_fresh(cvfs, p, fds=[a, b])
    finally:
        os.close(a)
        os.close(b)
    assert read_file(p) == want
    for i in range(6):  # write, close, reopen, read
        with open(p, "r+b") as f:
            f.seek(i * 3000)
            f.write(b"%d" % i * 700)
        want[i * 3000:i * 3000 + 700] = b"%d" % i * 700
        assert_file(p, bytes(want))


# --- pages kept across opens -------------------------------------------------

@pytest.mark.parametrize("held", [False, True], ids=["closed", "held"])
@pytest.mark.parametrize("change", CHANGES)
def test_kept_pages_never_hide_a_change(cvfs, change, held):
    """The kernel keeps a file's pages across opens; a change made through
    the mount (while no handle, or another handle, is open) shows in the
    next open at once, and in the held handle."""
    p = cvfs.p("f")
    data = util.rand_bytes(16384, 9)
    write_file(p, data)
    assert read_file(p) == data
    h = os.open(p, os.O_RDONLY) if held else None
    try:
        if h is not None:
            assert fd_data(h) == data
        warm(p)
        want = change_file(p, change, data)
        assert_file(p, want, h)
        assert_fresh(cvfs, p)
        assert_file(p, want, h)  # and once more, from the kept pages
    finally:
        if h is not None:
            os.close(h)


def _replace_behind_the_back(m, a, b, how):
    """Put the ciphertext of the file B in place of A's in the cipherdir:
    copied over it (the same backing inode), or renamed over it."""
    ba = backing(m, os.stat(a).st_ino)
    bb = backing(m, os.stat(b).st_ino)
    if how == "in_place":
        with open(bb, "rb") as src, open(ba, "r+b") as dst:
            dst.truncate(0)
            dst.write(src.read())
    else:
        shutil.copyfile(bb, ba + ".tmp")
        os.rename(ba + ".tmp", ba)


def _assert_not_old(path, old, new):
    """PATH reads as NEW (maybe cut short) or fails with EIO; never as
    OLD."""
    try:
        got = read_file(path)
    except OSError as e:
        assert e.errno == errno.EIO, e
        return
    assert got, "reads nothing"
    assert got != old[:len(got)], "the kept pages of the old content"
    assert got == new[:len(got)], \
        "neither the other file's plaintext nor an I/O error"


@pytest.mark.parametrize("how", ["in_place", "renamed_over"])
@pytest.mark.parametrize("sizes", [(10000, 5000), (5000, 10000),
                                   (8192, 8192)], ids=str)
def test_backing_replaced_behind_the_back(cvfs, mounter, how, sizes):
    """Unsupported, documented: the ciphertext of a file is replaced in
    the cipherdir, behind the mount's back, by another file's ciphertext
    (copied over it in place, or renamed over it), while nothing has the
    file open. The next open must not show the pages the kernel kept of
    the old content: the daemon notices that the backing file changed
    (ctime, mtime, size; or another inode) and has them dropped.

    What a user sees then: the other file's plaintext (both files have
    the same key; a file's header carries its own file ID), possibly cut
    at the size the kernel still had for the file (the first read after
    the change; stat may show the old size until something makes the
    kernel ask again, at the latest after the attribute timeout) -- or an
    I/O error. After a remount the file reads as the other file.

    "Nothing has it open" includes the daemon: the kernel sends RELEASE
    after close(2) has returned, so the test waits for the daemon to let
    go of the backing file (test_backing_replaced_while_open is what
    happens before it does)."""
    a, b = cvfs.p("a"), cvfs.p("b")
    adata, bdata = util.rand_bytes(sizes[0], 1), util.rand_bytes(sizes[1], 2)
    write_file(a, adata)
    write_file(b, bdata)
    warm(a, b)
    assert read_file(a) == adata  # in the page cache now, kept across opens
    ba = backing(cvfs, os.stat(a).st_ino)
    eventually(lambda: not daemon_holds(cvfs, ba), "the daemon's RELEASE")
    _replace_behind_the_back(cvfs, a, b, how)
    _assert_not_old(a, adata, bdata)
    m = remount(mounter, cvfs)
    assert read_file(m.p("a")) == bdata


def test_append_after_another_writer_grew_the_file(mounter, gocryptfs):
    """Unsupported, documented, but no data lost: while veilfs holds a file
    open, gocryptfs appends to it in the same cipherdir; a new open through
    veilfs sees the new size and an append there keeps both writers' bytes
    (the daemon once kept the size of its own last write and padded over
    the other writer's data with zeros)."""
    cipherdir = mounter.init()
    m = mounter.mount(cipherdir)
    p = m.p("f")
    h1 = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(h1, b"A" * 10000, 0)
        g = mounter.mount(cipherdir, binary=gocryptfs, label="gocryptfs")
        with open(g.p("f"), "ab") as f:
            f.write(b"B" * 5000)
        mounter.unmount(g)
        h2 = os.open(p, os.O_RDWR)
        try:
            assert os.fstat(h2).st_size == 15000
            os.pwrite(h2, b"C" * 100, 15000)
        finally:
            os.close(h2)
    finally:
        os.close(h1)
    want = b"A" * 10000 + b"B" * 5000 + b"C" * 100
    assert read_file(p) == want
    mounter.unmount(m)
    g = mounter.mount(cipherdir, binary=gocryptfs, label="gocryptfs")
    assert read_file(g.p("f")) == want


@pytest.mark.parametrize("how", ["in_place", "renamed_over"])
def test_backing_replaced_while_open(cvfs, how):
    """Unsupported, documented: as test_backing_replaced_behind_the_back,
    but while a handle of the file is open (what the daemon also sees for
    a moment after the user's last close(2): the kernel sends RELEASE
    asynchronously). What the open handle reads is anyone's guess; a new
    open must still not show the old content."""
    a, b = cvfs.p("a"), cvfs.p("b")
    adata, bdata = util.rand_bytes(10000, 1), util.rand_bytes(5000, 2)
    write_file(a, adata)
    write_file(b, bdata)
    h = os.open(a, os.O_RDONLY)
    try:
        assert fd_data(h) == adata
        warm(a, b)
        _replace_behind_the_back(cvfs, a, b, how)
        _assert_not_old(a, adata, bdata)
    finally:
        os.close(h)


def test_caches_are_in_effect(vfs, mounter):
    """The attribute cache the other tests exercise is there: a mode that
    a second mount of the cipherdir (without -sharedstorage: unsupported)
    changes behind a warm mount's back does not show through it. So the
    tests here that pass do so because the kernel saw, or was told of,
    each change. (A descriptor held open keeps the kernel from dropping
    the name and the inode, as it may under memory pressure or
    drop_caches; negative entries and listings cannot be held so.)"""
    p = vfs.p("f")
    write_file(p, b"data", 0o644)
    fd = os.open(p, os.O_RDONLY)
    try:
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o644
        other = mounter.mount(vfs.cipherdir, label="behind")
        os.chmod(other.p("f"), 0o600)
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o644
        assert stat.S_IMODE(os.fstat(fd).st_mode) == 0o644
    finally:
        os.close(fd)


# --- xattrs ------------------------------------------------------------------

def test_xattrs_through_every_name(vfs, mounter):
    """Attributes set or removed through one name or descriptor show
    through the other name at once; the daemon's "no attributes" answer,
    cached before, never hides a new one (files and directories)."""
    a, b, _ = _linked(vfs)
    d = vfs.p("d")
    for i, (setp, getp) in enumerate([(a, b), (b, a), (d, d)]):
        warm(a, b, d)
        for p in (setp, getp):
            assert os.listxattr(p) == []
            expect_errno(errno.ENODATA, os.getxattr, p, "user.k")
        v = b"value %d" % i
        os.setxattr(setp, "user.k", v)
        assert os.getxattr(getp, "user.k") == v
        assert os.listxattr(getp) == ["user.k"]
        os.setxattr(setp, "user." + "n" * 150, b"")
        assert sorted(os.listxattr(getp)) == ["user.k", "user." + "n" * 150]
        os.removexattr(getp, "user.k")
        os.removexattr(getp, "user." + "n" * 150)
        expect_errno(errno.ENODATA, os.getxattr, setp, "user.k")
        assert os.listxattr(setp) == []
        assert_fresh(vfs, a, b, d)
    fd = os.open(a, os.O_RDONLY)
    try:
        expect_errno(errno.ENODATA, os.getxattr, b, "user.fd")
        os.setxattr(fd, "user.fd", b"through fd")
        assert os.getxattr(b, "user.fd") == b"through fd"
        os.removexattr(b, "user.fd")
        assert os.listxattr(fd) == []
    finally:
        os.close(fd)
    os.setxattr(a, "user.kept", b"kept")
    os.setxattr(d, "user.kept", b"dir")
    m = remount(mounter, vfs)
    assert os.getxattr(m.p("d", "b"), "user.kept") == b"kept"
    assert os.getxattr(m.p("d"), "user.kept") == b"dir"


# --- long names --------------------------------------------------------------

def test_long_names(vfs, mounter):
    """Names long enough for a sidecar: create, rename long to short, short
    to long, long to long (across directories, and over another file),
    link and unlink; stats and listings follow at once, and the cipherdir
    keeps one sidecar per long name."""
    long3 = "N" * 230
    os.mkdir(vfs.p("d"))
    want = {"": {"d": "dir"}, "d": {}}

    def step(m, change, *gone):
        gone = [m.p(g) for g in gone]
        warm(m.mnt, m.p("d"), *gone)
        change()
        for g in gone:
            expect_errno(errno.ENOENT, os.lstat, g)
        for where, names in want.items():
            assert kinds(m.p(where)) == names, where
            assert sorted(os.listdir(m.p(where))) == sorted(names), where
        assert_fresh(m, m.mnt, m.p("d"),
                     *[m.p(w, n) for w, ns in want.items() for n in ns])
        if not m.plaintextnames:
            assert sidecars(m) == sum(len(n) >= 176 for ns in want.values()
                                      for n in ns)

    p = vfs.p
    expect_errno(errno.ENOENT, os.lstat, p(LONG))
    want[""][LONG] = "file"
    step(vfs, lambda: write_file(p(LONG), b"long"))
    want[""]["s"] = want[""].pop(LONG)
    step(vfs, lambda: os.rename(p(LONG), p("s")), LONG)
    want[""][LONG2] = want[""].pop("s")
    step(vfs, lambda: os.rename(p("s"), p(LONG2)), "s")
    want["d"][LONG] = want[""].pop(LONG2)
    step(vfs, lambda: os.rename(p(LONG2), p("d", LONG)), LONG2)
    want[""][LONG2] = "file"
    step(vfs, lambda: os.link(p("d", LONG), p(LONG2)))
    assert os.stat(p("d", LONG)).st_nlink == 2
    want["d"][LONG2] = "dir"
    step(vfs, lambda: os.mkdir(p("d", LONG2)))
    want[""][LONG] = "link"
    step(vfs, lambda: os.symlink(LONG2, p(LONG)))
    assert os.readlink(p(LONG)) == LONG2
    want["d"][long3] = "file"
    step(vfs, lambda: write_file(p("d", long3), b"other"))
    del want["d"][long3]
    step(vfs, lambda: os.rename(p("d", long3), p(LONG2)), "d/" + long3)
    assert read_file(p(LONG2)) == b"other"
    assert read_file(p("d", LONG)) == b"long"
    assert os.stat(p("d", LONG)).st_nlink == 1
    m = remount(mounter, vfs)
    step(m, lambda: None)
    del want[""][LONG2], want[""][LONG], want["d"][LONG]
    step(m, lambda: [os.unlink(m.p(n)) for n in (LONG2, LONG, "d/" + LONG)],
         LONG2, LONG, "d/" + LONG)
    del want["d"][LONG2]
    step(m, lambda: os.rmdir(m.p("d", LONG2)), "d/" + LONG2)


# --- directory listings ------------------------------------------------------

def test_listing_follows_every_change(vfs, mounter):
    """A directory listed before (the kernel keeps its listing across
    opens) lists exactly the entries it holds after every kind of change
    in it, right after the change, with the right d_type."""
    d, o = vfs.p("d"), vfs.p("o")
    os.mkdir(d)
    os.mkdir(o)
    want = {d: {}, o: {}}

    def step(fn, *args):
        warm(d, o)
        fn(*args)
        for where, names in want.items():
            assert kinds(where) == names, (fn.__name__, args)
            assert sorted(os.listdir(where)) == sorted(names)
            assert len(util.readdir_raw(where)) == len(names) + 2
        assert_fresh(vfs, d, o)

    def dp(*n):
        return os.path.join(d, *n)

    def op(*n):
        return os.path.join(o, *n)

    want[d]["f"] = "file"
    step(write_file, dp("f"), b"f")
    want[d]["sub"] = "dir"
    step(os.mkdir, dp("sub"))
    want[d]["l"] = "link"
    step(os.symlink, "f", dp("l"))
    want[d]["p"] = "fifo"
    step(os.mkfifo, dp("p"))
    want[o]["far"] = "file"
    step(write_file, op("far"), b"far")
    want[d]["hl"] = "file"
    step(os.link, op("far"), dp("hl"))
    want[d]["g"] = want[d].pop("f")
    step(os.rename, dp("f"), dp("g"))
    want[o]["far2"] = "file"
    step(write_file, op("far2"), b"far2")
    want[d]["in"] = want[o].pop("far2")
    step(os.rename, op("far2"), dp("in"))
    want[o]["g"] = want[d].pop("g")
    step(os.rename, dp("g"), op("g"))
    want[d]["hl"] = want[d].pop("in")
    step(os.rename, dp("in"), dp("hl"))
    del want[d]["l"]
    step(os.unlink, dp("l"))
    del want[d]["sub"]
    step(os.rmdir, dp("sub"))
    del want[d]["p"]
    step(os.unlink, dp("p"))
    want[d]["p"] = "dir"
    step(os.mkdir, dp("p"))
    want[o]["sl"] = "link"
    step(os.symlink, "far", op("sl"))
    want[d]["hl"] = want[o].pop("sl")
    step(os.rename, op("sl"), dp("hl"))
    want[d]["p"], want[o]["g"] = want[o]["g"], want[d]["p"]
    step(util.renameat2, dp("p"), op("g"), util.RENAME_EXCHANGE)
    want[d][LONG] = "file"
    step(write_file, dp(LONG), b"long")
    want[o][LONG2] = want[d].pop(LONG)
    step(os.rename, dp(LONG), op(LONG2))
    m = remount(mounter, vfs)
    assert kinds(m.p("d")) == want[d]
    assert kinds(m.p("o")) == want[o]


def test_listed_parent_after_directory_move(vfs):
    """The ".." entry of a directory's listing names its parent also
    after the directory moved to another parent (by rename and by
    RENAME_EXCHANGE), though the listing was read before the move."""
    for n in ("p1", "p2", "p1/d", "p1/e", "p2/f"):
        os.mkdir(vfs.p(n))

    def parents():
        """{directory: (parent's inode number by its '..' entry, by stat)}
        of every directory below p1 and p2."""
        out = {}
        for parent in ("p1", "p2"):
            for n in os.listdir(vfs.p(parent)):
                out[parent + "/" + n] = (
                    util.readdir_raw(vfs.p(parent, n))[".."][0],
                    os.stat(vfs.p(parent)).st_ino)
        return out

    for _ in range(2):  # the second listing from the kernel's copy
        assert all(a == b for a, b in parents().values())
    os.rename(vfs.p("p1", "d"), vfs.p("p2", "d"))
    util.renameat2(vfs.p("p1", "e"), vfs.p("p2", "f"), util.RENAME_EXCHANGE)
    stale = {k: v for k, v in parents().items() if v[0] != v[1]}
    assert not stale, "'..' in the listing, parent by stat: %r" % stale


# --- directories and symlinks ------------------------------------------------

def test_directories(vfs, mounter):
    """rmdir and mkdir of one name, the parent's link count and mtime after
    mkdir and rmdir, and a moved directory's contents through its new path
    (the old one is gone), all at once."""
    par = vfs.p("par")
    sub = os.path.join(par, "sub")
    os.mkdir(par)
    os.mkdir(sub)
    write_file(os.path.join(sub, "c"), b"child")
    warm(par, sub, os.path.join(sub, "c"))
    os.unlink(os.path.join(sub, "c"))
    os.rmdir(sub)
    expect_errno(errno.ENOENT, os.stat, sub)
    os.mkdir(sub)
    assert os.listdir(sub) == []
    expect_errno(errno.ENOENT, os.stat, os.path.join(sub, "c"))
    assert_fresh(vfs, par, sub)
    for change in ("mkdir", "rmdir", "mkdir"):
        os.utime(par, ns=(T1, T1))
        n0 = os.stat(par).st_nlink
        warm(par, os.path.join(par, "new"))
        if change == "mkdir":
            os.mkdir(os.path.join(par, "new"))
        else:
            os.rmdir(os.path.join(par, "new"))
        st = os.stat(par)
        assert st.st_nlink == n0 + (1 if change == "mkdir" else -1), change
        assert st.st_mtime_ns != T1, change
        assert_fresh(vfs, par)
    # a moved tree: children through the new path only
    write_file(os.path.join(par, "new", "f"), b"deep file")
    os.mkdir(vfs.p("other"))
    old = [par, sub, os.path.join(par, "new"), os.path.join(par, "new", "f")]
    warm(vfs.mnt, vfs.p("other"), *old)
    os.rename(par, vfs.p("other", LONG))
    moved = vfs.p("other", LONG)
    for p in old:
        expect_errno(errno.ENOENT, os.stat, p)
    assert read_file(os.path.join(moved, "new", "f")) == b"deep file"
    assert sorted(os.listdir(moved)) == ["new", "sub"]
    assert sorted(os.listdir(vfs.mnt)) == ["other"]
    write_file(os.path.join(moved, "sub", "g"), b"after the move")
    assert_fresh(vfs, vfs.mnt, vfs.p("other"), moved,
                 os.path.join(moved, "new", "f"))
    m = remount(mounter, vfs)
    assert read_file(m.p("other", LONG, "sub", "g")) == b"after the move"
    assert read_file(m.p("other", LONG, "new", "f")) == b"deep file"


def test_symlink_replaced(vfs, mounter):
    """A symlink replaced (unlink and symlink, rename over it, exchange)
    reads its new target at once, and leads there."""
    s = vfs.p(LONG)
    write_file(vfs.p("t1"), b"one")
    write_file(vfs.p("t2"), b"two")
    os.symlink("t1", s)
    for new, how in [("t2", "recreate"), ("t1", "rename"),
                     ("t2", "exchange"), ("t1", "recreate")]:
        warm(s, vfs.mnt)
        assert read_file(s) == (b"one" if new == "t2" else b"two")
        if how == "recreate":
            os.unlink(s)
            os.symlink(new, s)
        else:
            os.symlink(new, vfs.p("tmp"))
            util.renameat2(vfs.p("tmp"), s, util.RENAME_EXCHANGE
                           if how == "exchange" else 0)
            if how == "exchange":
                os.unlink(vfs.p("tmp"))
        assert os.readlink(s) == new, how
        assert os.lstat(s).st_size == len(new)
        assert read_file(s) == (b"two" if new == "t2" else b"one"), how
        assert_fresh(vfs, s, vfs.mnt)
    m = remount(mounter, vfs)
    assert os.readlink(m.p(LONG)) == "t1"


# --- -sharedstorage and reverse mode -----------------------------------------

def test_sharedstorage_sees_the_other_mount_at_once(mounter):
    """Two -sharedstorage mounts of one cipherdir: what A changes, B
    shows at once (stat, contents, listing, a name B looked up while it
    was absent), though B had looked at everything before."""
    cd = mounter.init(("-gcm",))
    args = ["-passfile", mounter.passfile, "-sharedstorage"]
    a = mounter.mount(cd, args=args, label="A")
    b = mounter.mount(cd, args=args, label="B")
    os.mkdir(a.p("d"))
    write_file(a.p("f"), util.rand_bytes(10000, 1))
    write_file(a.p("g"), b"g")
    os.symlink("target-1", a.p("L"))

    def relink(path, target):
        # the new symlink may get the freed inode number (ext4 does)
        os.unlink(path)
        os.symlink(target, path)

    def changes():
        yield write_file, a.p("f"), util.rand_bytes(5000, 2)
        yield write_file, a.p("f"), util.rand_bytes(5000, 3)  # same size
        yield write_file, a.p("new"), b"new"
        yield os.mkdir, a.p("d", LONG)
        yield os.rename, a.p("g"), a.p("d", "g")
        yield os.unlink, a.p("new")
        yield os.chmod, a.p("f"), 0o600
        yield os.setxattr, a.p("f"), "user.k", b"v"
        yield os.truncate, a.p("f"), 4097
        yield relink, a.p("L"), "target-2"
        yield relink, a.p("L"), "target-3"

    for fn, *args in changes():
        for m in (a, b):
            warm(m.mnt, m.p("d"), m.p("f"), m.p("new"), m.p("g"),
                 m.p("d", "g"))
            os.readlink(m.p("L"))
        fn(*args)
        for rel in ("", "d"):
            assert sorted(os.listdir(b.p(rel))) == \
                sorted(os.listdir(a.p(rel))), (fn.__name__, rel)
        for rel in ("f", "new", "g", "d/g", "d/" + LONG):
            try:
                sa = os.lstat(a.p(rel))
            except FileNotFoundError:
                expect_errno(errno.ENOENT, os.lstat, b.p(rel))
                continue
            sb = os.lstat(b.p(rel))
            assert (sb.st_mode, sb.st_size, sb.st_mtime_ns, sb.st_ino) == \
                (sa.st_mode, sa.st_size, sa.st_mtime_ns, sa.st_ino), rel
            if stat.S_ISREG(sa.st_mode):
                assert read_file(b.p(rel)) == read_file(a.p(rel)), rel
                assert os.listxattr(b.p(rel)) == os.listxattr(a.p(rel))
        assert os.readlink(b.p("L")) == os.readlink(a.p("L")), fn.__name__


def test_reverse_sees_plaintext_changes(mounter, tmp_path):
    """Reverse mode keeps names and attributes for a second: a plaintext
    file added, grown or removed shows in the view within a few seconds,
    also where the view had looked the name up while absent
    (-plaintextnames, where the name is known beforehand)."""
    for flags in ([], ["-plaintextnames"]):
        plain = str(tmp_path / ("plain%d" % len(flags)))
        os.mkdir(plain)
        mounter.init(["-reverse", *flags], cipherdir=plain)
        write_file(os.path.join(plain, "a"), b"a" * 100)
        v = mounter.mount(plain, args=["-reverse", "-passfile",
                                       mounter.passfile])
        before = set(os.listdir(v.mnt))
        warm(v.mnt, *[v.p(n) for n in before])
        if flags:
            expect_errno(errno.ENOENT, os.stat, v.p("b"))
        write_file(os.path.join(plain, "b"), b"b" * 5000)
        eventually(lambda: len(set(os.listdir(v.mnt)) - before) == 1,
                   "a new file in the listing")
        new = (set(os.listdir(v.mnt)) - before).pop()
        if flags:
            assert new == "b"
        eventually(lambda: os.path.lexists(v.p(new)), "the new name")
        assert os.stat(v.p(new)).st_size == util.cipher_size(5000, 32)
        with open(os.path.join(plain, "b"), "ab") as f:
            f.write(b"c" * 5000)
        eventually(lambda: os.stat(v.p(new)).st_size ==
                   util.cipher_size(10000, 32), "the new size")
        assert len(read_file(v.p(new))) == util.cipher_size(10000, 32)
        os.unlink(os.path.join(plain, "b"))
        eventually(lambda: set(os.listdir(v.mnt)) == before and
                   not os.path.lexists(v.p(new)), "the file gone")
        # a symlink replaced (the new one may get the freed inode number)
        lp = os.path.join(plain, "L")
        os.symlink("target-1", lp)
        eventually(lambda: len(set(os.listdir(v.mnt)) - before) == 1,
                   "the symlink")
        vl = v.p((set(os.listdir(v.mnt)) - before).pop())
        old = os.readlink(vl)
        os.unlink(lp)
        os.symlink("target-2", lp)
        eventually(lambda: os.readlink(vl) != old, "the new target")
        mounter.unmount(v)


@pytest.mark.parametrize("how", ["link", "lookup", "listing"])
def test_a_name_found_during_an_answered_write_shows_its_times(tmp_path,
                                                               how):
    """A write of whole blocks at the end is answered before it is
    written; a hard link made meanwhile, or another name of the file looked
    up or listed (READDIRPLUS) for the first time meanwhile, must answer
    with the file's times after the write, which the kernel then keeps (it
    once answered with the times before it: stat of either name showed an
    mtime older than the file's for as long as the kernel kept it). The
    write is held back 300 ms in the daemon by tests/tools/faultshim."""
    import reliab_util as ru

    faults = str(tmp_path / "faults")
    os.mkdir(faults)
    m = ru.new_fs(tmp_path, "gcm")
    m.env = {"LD_PRELOAD": ru.tool("faultshim.so"),
             "VEILFS_FAULT_DIR": faults}
    if os.environ.get("VEILFS_SANITIZED"):
        m.env["ASAN_OPTIONS"] = (os.environ.get("ASAN_OPTIONS", "") +
                                 ":verify_asan_link_order=0")
    if how != "link":
        with m:  # g: a name this mount will not have looked up
            os.mkdir(os.path.join(m.mnt, "d"))
            write_file(os.path.join(m.mnt, "d", "f"), b"a" * 131072)
            os.link(os.path.join(m.mnt, "d", "f"),
                    os.path.join(m.mnt, "d", "g"))
    with m:
        d = os.path.join(m.mnt, "d")
        f, g = os.path.join(d, "f"), os.path.join(d, "g")
        if how == "link":
            os.mkdir(d)
            write_file(f, b"a" * 131072)
        fd = os.open(f, os.O_WRONLY)
        try:
            open(os.path.join(faults, "delay"), "w").close()
            os.pwrite(fd, b"b" * 131072, 131072)
            # answered early: the backing write still waits in the daemon
            if how == "link":
                os.link(f, g)
            elif how == "lookup":
                os.stat(g)
            else:
                assert sorted(e.name for e in os.scandir(d)) == ["f", "g"]
            os.fsync(fd)
        finally:
            os.close(fd)
        assert os.listdir(faults) == [], "the write was not delayed"
        cd = os.path.join(m.cipherdir, ru.cipher_entries(m.cipherdir)[0])
        back = os.stat(os.path.join(cd, [n for n in os.listdir(cd)
                                         if n != "gocryptfs.diriv"][0]))
        for p in (f, g):
            st = os.stat(p)
            assert st.st_mtime_ns == back.st_mtime_ns, p
            assert st.st_size == 262144
    assert "faultshim: pwrite" in m.log()
