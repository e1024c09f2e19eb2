# SPDX-License-Identifier: MIT
"""Directory listings with and without attributes (issue #18, fe.c).

A forward mount answers READDIRPLUS with every entry's attributes only
while programs go on to look at the entries (ls -l, du, rm -rf); otherwise
(find -name, a search for untracked files) it sends names, numbers and
types and leaves the attributes to a LOOKUP if one comes. Either way a
program must see the same thing; these tests check that with walks of
every kind on cold mounts (a fresh daemon, nothing in the kernel's caches),
one after another and at the same time, and count the requests that tell
the two kinds of listing apart in the daemon's -fusedebug output.
"""

import os
import stat
import subprocess
import threading

import pytest

import util

LONG = "L" * 200  # long once encrypted: a .name sidecar in the cipherdir


def _tree(root, dirs=12, files=6, big=90):
    """Directories of a few files each, one of BIG files, one with only
    directories, and one of every other kind of entry."""
    for i in range(dirs):
        d = os.path.join(root, "d%02d" % i)
        os.mkdir(d)
        for j in range(files):
            util.write_file(os.path.join(d, "f%d.c" % j), b"x" * (i * 7 + j))
    os.makedirs(os.path.join(root, "only", "dirs", "deep"))
    big_dir = os.path.join(root, "big")
    os.mkdir(big_dir)
    for j in range(big):
        util.write_file(os.path.join(big_dir, "b%03d.h" % j), b"y" * j)
    k = os.path.join(root, "kinds")
    os.mkdir(k)
    util.write_file(os.path.join(k, "file"), b"data" * 100)
    util.write_file(os.path.join(k, LONG), b"long name")
    os.symlink("file", os.path.join(k, "link"))
    os.symlink("x" * 300, os.path.join(k, "longtarget"))
    os.mkfifo(os.path.join(k, "fifo"))
    os.link(os.path.join(k, "file"), os.path.join(k, "hard"))
    os.mkdir(os.path.join(k, LONG + "d"))
    util.write_file(os.path.join(k, LONG + "d", "in"), b"in")


def _ls(root):
    """What `ls -lRin` shows of ROOT: numbers, types, modes, links, owners,
    sizes, times and symlink targets of every entry."""
    p = subprocess.run(["ls", "-lRin", "--time-style=+%s.%N", "."],
                       cwd=root, capture_output=True, text=True,
                       timeout=60 * util.SLOW)
    assert p.returncode == 0, p.stderr
    return p.stdout


def _find(root, *expr):
    p = subprocess.run(["find", "."] + list(expr), cwd=root,
                       capture_output=True, text=True, timeout=60 * util.SLOW)
    assert p.returncode == 0, p.stderr
    return sorted(p.stdout.split())


def _dirents(root):
    """{relpath: (type from d_type, d_ino)} of every entry under ROOT, from
    the listings alone."""
    out = {}
    todo = [root]
    while todo:
        d = todo.pop()
        for e in os.scandir(d):
            kind = ("link" if e.is_symlink() else
                    "dir" if e.is_dir(follow_symlinks=False) else
                    "file" if e.is_file(follow_symlinks=False) else "other")
            out[os.path.relpath(e.path, root)] = (kind, e.inode())
            if kind == "dir":
                todo.append(e.path)
    return out


def _stat_kind(mode):
    return {stat.S_IFLNK: "link", stat.S_IFDIR: "dir",
            stat.S_IFREG: "file"}.get(stat.S_IFMT(mode), "other")


def _lookups(m):
    return m.log().count("opcode: LOOKUP")


@pytest.fixture
def cold(mounter):
    """A cipherdir holding _tree, and remount(flags) giving a fresh mount
    of it with -fusedebug (its requests counted in the log)."""
    cipherdir = mounter.init()
    m = mounter.mount(cipherdir)
    _tree(m.p())
    want = (_ls(m.p()), util.snapshot(m.p()))
    mounter.unmount(m)

    def remount(flags=()):
        return mounter.mount(cipherdir, args=["-passfile", mounter.passfile,
                                              "-fusedebug", *flags])
    remount.want = want
    return remount


@pytest.mark.parametrize("flags", [[], ["-sharedstorage"]])
@pytest.mark.parametrize("first", ["find", "scandir", "ls", "du", "rm"])
def test_every_walk_sees_the_same(cold, flags, first):
    """Whatever walk comes first on a cold mount, and whatever kind of
    listing it got, every later look shows what the tree holds: ls -lRin
    (inode numbers, types, sizes, times, targets) as before the remount,
    each entry's d_type and d_ino equal to what lstat says, contents."""
    want_ls, want_snap = cold.want
    m = cold(flags)
    root = m.p()
    if first == "find":
        assert len(_find(root, "-name", "*.c")) == 72
    elif first == "scandir":
        assert len(_dirents(root)) == len(want_snap)
    elif first == "ls":
        assert _ls(root) == want_ls
    elif first == "du":
        p = subprocess.run(["du", "-s", root], capture_output=True,
                           timeout=60 * util.SLOW)
        assert p.returncode == 0, p.stderr
    else:
        subprocess.run(["rm", "-rf", m.p("d03"), m.p("kinds")], check=True,
                       timeout=60 * util.SLOW)
        for k in list(want_snap):
            if k.split("/")[0] in ("d03", "kinds"):
                del want_snap[k]
        want_ls = None
        assert not os.path.exists(m.p("kinds"))
    ents = _dirents(root)
    assert sorted(ents) == sorted(want_snap)
    for rel, (kind, ino) in ents.items():
        st = os.lstat(os.path.join(root, rel))
        assert (kind, ino) == (_stat_kind(st.st_mode), st.st_ino), rel
    if want_ls is not None:
        assert _ls(root) == want_ls
    assert util.diff_snapshots(util.snapshot(root), want_snap) == []


def test_find_reads_no_file_attributes(cold):
    """find -name on a cold mount: directories come with their attributes
    (find descends without a LOOKUP), files without (the daemon reads none
    of them and the kernel makes no inode for them): a stat of each file
    afterwards is the first time the daemon is asked about it."""
    m = cold()
    assert len(_find(m.p(), "-name", "*.h")) == 90
    assert _lookups(m) == 0
    files = [m.p("d%02d" % i, "f%d.c" % j) for i in range(12)
             for j in range(6)]
    for f in files:
        os.lstat(f)
    assert _lookups(m) == len(files)


@pytest.mark.parametrize("walk", [["ls", "-lR"], ["du", "-s"],
                                  ["rm", "-rf"]])
def test_walks_that_stat_get_attributes_with_listings(cold, walk):
    """ls -lR, du and rm -rf look at (or unlink) every entry they list:
    after the daemon sees that from the LOOKUPs of one small directory's
    files, it sends attributes with the listings, and the remaining
    directories cost no LOOKUP per file (72 + 90 files in all; at most one
    directory of 6 files is looked up one by one)."""
    m = cold()
    # the top level holds directories only: they come with attributes,
    # so naming them to the walk costs no LOOKUP
    top = [m.p(n) for n in sorted(os.listdir(m.p()))]
    p = subprocess.run(walk + top, capture_output=True,
                       timeout=60 * util.SLOW)
    assert p.returncode == 0, p.stderr
    assert _lookups(m) <= 6, m.log()[-3000:]
    if walk[0] == "rm":
        assert os.listdir(m.p()) == []


def test_walks_at_the_same_time(cold):
    """find, ls -lR and a scandir walk running at once on a cold mount
    (each turning the kind of listing the others get) see what each sees
    alone."""
    want_ls, want_snap = cold.want
    m = cold()
    root = m.p()
    errors = []

    def run(fn):
        try:
            for _ in range(3):
                fn()
        except Exception as e:  # reported below
            errors.append(e)

    def find():
        assert len(_find(root, "-name", "*.c")) == 72

    def ls():
        assert _ls(root) == want_ls

    def walk():
        ents = _dirents(root)
        for rel, (kind, ino) in ents.items():
            st = os.lstat(os.path.join(root, rel))
            assert (kind, ino) == (_stat_kind(st.st_mode), st.st_ino), rel
    ts = [threading.Thread(target=run, args=(fn,)) for fn in (find, ls, walk)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    assert util.diff_snapshots(util.snapshot(root), want_snap) == []


def test_probe_is_a_directory_that_decides(mounter):
    """The listing that probes whether a program wants attributes has
    enough entries to tell: a directory of 2 files does not decide, so
    ls -lR of a (2 files), b (100 files) and c (6 files) looks up at most
    c's files one by one, never b's hundred."""
    cipherdir = mounter.init()
    m = mounter.mount(cipherdir)
    for d, n in (("a", 2), ("b", 100), ("c", 6)):
        os.mkdir(m.p(d))
        for j in range(n):
            util.write_file(m.p(d, "f%03d" % j), b"z")
    want = _ls(m.p())
    mounter.unmount(m)
    m = mounter.mount(cipherdir, args=["-passfile", mounter.passfile,
                                       "-fusedebug"])
    assert _ls(m.p()) == want
    assert _lookups(m) <= 6, m.log()[-3000:]


def _getdents(fd, size=4096):
    """One getdents64 call: the names it returned ([] at the end)."""
    import ctypes
    import struct
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(size)
    n = libc.syscall(217, fd, buf, size)  # SYS_getdents64 on x86-64
    if n < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    raw, out, pos = buf.raw[:n], [], 0
    while pos < n:
        reclen = struct.unpack_from("<H", raw, pos + 16)[0]
        out.append(raw[pos + 19:pos + reclen].split(b"\0", 1)[0].decode())
        pos += reclen
    return out


@pytest.mark.parametrize("shared", [False, True],
                         ids=["", "sharedstorage"])
def test_two_listings_at_once_each_see_every_entry(mounter, shared):
    """Program A has read the first part of a directory's listing; 20 of
    the entries it got are removed and program B lists the directory
    from the start; A then reads on: it gets every entry that existed all
    along, once (A once went on in B's listing, where the removed
    entries shifted the rest: 20 entries were missing)."""
    cd = mounter.init(("-gcm",))
    args = ["-passfile", mounter.passfile] + (["-sharedstorage"] if shared
                                              else [])
    m = mounter.mount(cd, args=args)
    d = m.p("d")
    os.mkdir(d)
    names = ["f%04d" % i for i in range(400)]
    for n in names:
        open(os.path.join(d, n), "w").close()
    fa = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    fb = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        first = _getdents(fa)
        gone = [n for n in first if n.startswith("f")][:20]
        assert len(gone) == 20, first
        for n in gone:
            os.unlink(os.path.join(d, n))
        b_seen = []
        while True:
            c = _getdents(fb)
            if not c:
                break
            b_seen += c
        rest = []
        while True:
            c = _getdents(fa)
            if not c:
                break
            rest += c
    finally:
        os.close(fa)
        os.close(fb)
    seen = [n for n in first + rest if n not in (".", "..")]
    kept = set(names) - set(gone)
    assert sorted(kept - set(seen)) == []
    assert len(seen) == len(set(seen))
    assert sorted(n for n in b_seen if n not in (".", "..")) == sorted(kept)


@pytest.mark.parametrize("shared", [False, True],
                         ids=["", "sharedstorage"])
def test_a_deleting_walk_that_keeps_every_level_open(mounter, shared):
    """A walk that deletes what it lists and keeps the listing of every
    level open while it descends (os.scandir here, nftw in C), 20 levels
    deep with 400 files each (more than one READDIR's worth): everything
    goes (with more than 16 listings
    in progress at once, the outer ones once went on at a shifted index:
    files were skipped and rmdir failed with ENOTEMPTY)."""
    cd = mounter.init(("-gcm",))
    args = ["-passfile", mounter.passfile] + (["-sharedstorage"] if shared
                                              else [])
    m = mounter.mount(cd, args=args)
    d = m.p("t")
    for _ in range(20):
        os.mkdir(d)
        for i in range(400):
            open(os.path.join(d, "f%03d" % i), "w").close()
        d = os.path.join(d, "sub")

    def rm(top):
        with os.scandir(top) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    rm(e.path)
                    os.rmdir(e.path)
                else:
                    os.unlink(e.path)

    rm(m.p("t"))
    os.rmdir(m.p("t"))
    assert os.listdir(m.mnt) == []


@pytest.mark.parametrize("last", ["kept", "removed"])
def test_a_listing_whose_snapshot_was_dropped(mounter, last):
    """More listings of one directory in progress at once than the daemon
    keeps snapshots for (70): the first one's is dropped; 20 entries it
    returned are removed (with or without the last one it returned), and
    it reads on from a new listing of the directory: every entry that
    existed all along comes (it once went on at the same index, where the
    removed entries had shifted the rest: entries were skipped). When the
    last entry it returned is gone, it starts over: entries may come
    twice, none is lost."""
    cd = mounter.init(("-gcm",))
    m = mounter.mount(cd)
    d = m.p("d")
    os.mkdir(d)
    names = ["f%04d" % i for i in range(400)]
    for n in names:
        open(os.path.join(d, n), "w").close()
    fds = [os.open(d, os.O_RDONLY | os.O_DIRECTORY) for _ in range(70)]
    try:
        first = _getdents(fds[0])
        for fd in fds[1:]:
            _getdents(fd)
        got = [n for n in first if n.startswith("f")]
        gone = got[:19] + got[-1:] if last == "removed" else got[:20]
        for n in gone:
            os.unlink(os.path.join(d, n))
        rest = []
        while True:
            c = _getdents(fds[0])
            if not c:
                break
            rest += c
    finally:
        for fd in fds:
            os.close(fd)
    seen = [n for n in first + rest if n not in (".", "..")]
    kept = set(names) - set(gone)
    assert sorted(kept - set(seen)) == []
    if last == "kept":
        assert len(seen) == len(set(seen))


def test_a_big_listing_is_not_read_anew_for_each_part(mounter):
    """A listing of a directory larger than what the daemon keeps of
    listings in all (70,000 entries), read one getdents64 at a time while
    other directories are listed in between: the daemon reads the big
    directory once (each other listing dropped the big one's snapshot,
    which was then read and decrypted anew for each part: quadratic in
    its size)."""
    cd = mounter.init(("-gcm",))
    m = mounter.mount(cd)
    before = set(os.listdir(cd))
    os.mkdir(m.p("big"))
    (back,) = set(os.listdir(cd)) - before
    for i in range(70000):
        os.mknod(m.p("big", "%05d" % i))
    for k in range(8):
        os.mkdir(m.p("small%d" % k))
        util.write_file(m.p("small%d" % k, "f"), b"f")
    mounter.unmount(m)
    m = mounter.mount(cd)
    ifd = util.open_watch(os.path.join(cd, back), util.IN_ACCESS)
    fd = os.open(m.p("big"), os.O_RDONLY | os.O_DIRECTORY)
    try:
        seen = _getdents(fd)
        assert util.was_opened(ifd, util.IN_ACCESS)  # read once
        for k in range(8):
            assert os.listdir(m.p("small%d" % k)) == ["f"]
            seen += _getdents(fd)
            assert not util.was_opened(ifd, util.IN_ACCESS), \
                "the big directory was read anew after %d others" % (k + 1)
        while True:
            part = _getdents(fd)
            if not part:
                break
            seen += part
    finally:
        os.close(fd)
        os.close(ifd)
    seen = [n for n in seen if n not in (".", "..")]
    assert len(seen) == 70000 and len(set(seen)) == 70000
