# SPDX-License-Identifier: MIT
"""veilfs on network and distributed backings (netback.py starts them):
sshfs through a dedicated sshd on 127.0.0.1, and a one-node MooseFS in a
network namespace made for it, each with two client mounts of one
directory, started for this module and stopped after it.

- the core of the forward suite on each backing (write/read/truncate/
  rename/unlink/symlinks/hard links/xattrs where the backing has them), a
  256 MiB file's sha256 and an untar of a few thousand files, cross-checked
  by gocryptfs;
- close-to-open: after a close on mount A, mount B sees the full size and
  bytes at once (and the server has them);
- -sharedstorage: two daemons writing disjoint and overlapping ranges of
  one file and appending at once, round after round: every byte is one of
  the bytes written, nothing fails to authenticate, gocryptfs reads the
  result; a reader on B while A rewrites sees old or new data, never EIO.
  On sshfs both daemons use one sshfs mount: byte-range locks do not reach
  through a second sshfs mount (veilfs(1) says so, and so does the mount).
  A local directory shared by two daemons runs the same tests.
- a documenting test: gocryptfs -sharedstorage corrupts files in the same
  two-writer test on MooseFS.

A backing that cannot start here is skipped with the reason; with CI=true
only environment limits skip (no /dev/fuse, no permission to create a
network namespace), anything else fails. VEILFS_LONG=1 runs more rounds.
"""

import errno
import hashlib
import os
import subprocess
import tarfile
import threading

import pytest

import netback
import util
from conftest import require_gocryptfs

LONG = bool(os.environ.get("VEILFS_LONG"))
ROUNDS = 40 if LONG else 8


def _start(kind, path):
    b = netback.KINDS[kind](path, clients=2, cache=False)
    try:
        b.start()
    except netback.Unavailable as e:
        if util.IN_CI and not e.env_limit:
            pytest.fail("%s backing cannot start (CI=true): %s"
                        % (kind, e))
        pytest.skip("%s backing cannot start: %s" % (kind, e))
    return b


def _backing_fixture(kind):
    @pytest.fixture(scope="module")
    def fx(tmp_path_factory):
        b = _start(kind, str(tmp_path_factory.mktemp(kind)))
        try:
            yield b
        finally:
            problems = b.stop()
            assert not problems, problems
    return fx


backing_sshfs = _backing_fixture("sshfs")
backing_moosefs = _backing_fixture("moosefs")


@pytest.fixture(scope="module", params=["sshfs", "moosefs"])
def backing(request):
    """A started backing with two client mounts, shared by the module's
    tests; each test works in its own directory of it."""
    return request.getfixturevalue("backing_" + request.param)


class Place:
    """Where one test keeps its cipherdir: the same directory seen through
    client mount 0 (a) and client mount 1 (b), and on the server (srv)."""

    def __init__(self, backing, name, tmp):
        if backing is None:  # a local directory
            self.kind = "local"
            self.a = self.b = self.srv = os.path.join(tmp, name)
        else:
            self.kind = backing.kind
            self.a = os.path.join(backing.clients[0], name)
            self.b = os.path.join(backing.clients[1], name)
            self.srv = (os.path.join(backing.export, name)
                        if backing.kind == "sshfs" else self.b)
        os.makedirs(self.a)

    @property
    def lock_b(self):
        """The path through which a second -sharedstorage daemon works:
        the other client, except on sshfs, whose locks hold within one
        sshfs mount only."""
        return self.a if self.kind == "sshfs" else self.b


@pytest.fixture
def place(backing, request, tmp_path):
    return Place(backing, request.node.name.replace("[", "_").rstrip("]"),
                 str(tmp_path))


@pytest.fixture(params=["local", "sshfs", "moosefs"])
def shared_place(request, tmp_path):
    """Like place, and also a local directory shared by two daemons."""
    if request.param == "local":
        return Place(None, "local", str(tmp_path))
    b = request.getfixturevalue("backing_" + request.param)
    return Place(b, request.node.name.replace("[", "_").rstrip("]"),
                 str(tmp_path))


def xattrs_work(path):
    try:
        os.setxattr(path, "user.veilfs-probe", b"1")
        os.removexattr(path, "user.veilfs-probe")
        return True
    except OSError as e:
        if e.errno in (errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS):
            return False
        raise


def gocryptfs_snapshot(mounter, cipherdir):
    """The tree as gocryptfs -ro shows it (the reference reads our files)."""
    require_gocryptfs()
    m = mounter.mount(cipherdir, binary=util.GOCRYPTFS_BIN,
                      args=["-ro", "-passfile", mounter.passfile],
                      label="gocryptfs")
    snap = util.snapshot(m.mnt)
    mounter.unmount(m)
    return snap


# --- the core of the forward suite -------------------------------------

def test_core_ops(place, mounter):
    cd = mounter.init(cipherdir=os.path.join(place.a, "cd"))
    m = mounter.mount(cd)
    data = util.rand_bytes(3 * 4096 + 1234, 1)
    util.write_file(m.p("f"), data)
    assert util.read_file(m.p("f")) == data
    fd = os.open(m.p("f"), os.O_RDWR)
    try:
        os.pwrite(fd, b"x" * 5000, 3000)
        os.ftruncate(fd, 20000)
        os.ftruncate(fd, 7000)
    finally:
        os.close(fd)
    want = (data[:3000] + b"x" * 5000 + data[8000:])[:7000]
    assert util.read_file(m.p("f")) == want
    os.mkdir(m.p("d"))
    os.rename(m.p("f"), m.p("d", "g"))
    os.rename(m.p("d"), m.p("e"))
    assert util.read_file(m.p("e", "g")) == want
    os.symlink("g", m.p("e", "s"))
    os.symlink("../nowhere/at/all", m.p("dangling"))
    assert os.readlink(m.p("e", "s")) == "g"
    assert util.read_file(m.p("e", "s")) == want
    os.link(m.p("e", "g"), m.p("hard"))
    with open(m.p("hard"), "r+b") as f:
        f.write(b"through the link")
    want = b"through the link" + want[16:]
    assert util.read_file(m.p("e", "g")) == want
    if place.kind != "sshfs":  # SFTP has no link count or inode numbers
        assert os.stat(m.p("hard")).st_nlink == 2
        assert os.stat(m.p("hard")).st_ino == os.stat(m.p("e", "g")).st_ino
    util.write_file(m.p("gone"), b"bye")
    os.unlink(m.p("gone"))
    os.mkdir(m.p("rmme"))
    os.rmdir(m.p("rmme"))
    os.chmod(m.p("hard"), 0o600)
    if xattrs_work(place.a):
        os.setxattr(m.p("e", "g"), "user.k", b"value")
        assert os.getxattr(m.p("e", "g"), "user.k") == b"value"
        assert "user.k" in os.listxattr(m.p("e", "g"))
    else:
        util.expect_errno((errno.ENOTSUP, errno.EOPNOTSUPP),
                          os.setxattr, m.p("e", "g"), "user.k", b"v")
    assert sorted(os.listdir(m.mnt)) == ["dangling", "e", "hard"]
    mine = util.snapshot(m.mnt)
    mounter.unmount(m)
    assert util.diff_snapshots(gocryptfs_snapshot(mounter, cd), mine) == []


def test_big_file_sha256(place, mounter):
    cd = mounter.init(cipherdir=os.path.join(place.a, "cd"))
    m = mounter.mount(cd)
    size = 256 << 20
    chunk = util.rand_bytes(1 << 20, 7)
    h = hashlib.sha256()
    with open(m.p("big"), "wb") as f:
        for i in range(size >> 20):
            piece = chunk[i:] + chunk[:i]
            f.write(piece)
            h.update(piece)
    assert os.stat(m.p("big")).st_size == size
    r = hashlib.sha256()
    with open(m.p("big"), "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            r.update(b)
    assert r.hexdigest() == h.hexdigest()


def _make_tree(root, nfiles):
    """A source tree of NFILES small files in nested directories, with
    symlinks (some dangling) and a hard link."""
    os.makedirs(root)
    for i in range(nfiles):
        d = os.path.join(root, "d%02d" % (i % 40), "s%d" % (i % 3))
        os.makedirs(d, exist_ok=True)
        util.write_file(os.path.join(d, "file%04d.txt" % i),
                        util.rand_bytes(i % 5000, i), 0o644 | (i & 0o111))
    os.symlink("d00/s0/file0000.txt", os.path.join(root, "link"))
    os.symlink("../../missing", os.path.join(root, "d01", "dangling"))
    os.link(os.path.join(root, "d00", "s0", "file0000.txt"),
            os.path.join(root, "hardlink"))


def test_untar(place, mounter, tmp_path):
    src = str(tmp_path / "src")
    _make_tree(src, 2000)
    tarball = str(tmp_path / "t.tar")
    with tarfile.open(tarball, "w") as t:
        t.add(src, arcname="tree")
    cd = mounter.init(cipherdir=os.path.join(place.a, "cd"))
    m = mounter.mount(cd)
    # sshfs cannot set the times or owner of a (dangling) symlink (SFTP
    # follows it): -m and --no-same-owner leave both alone instead of
    # skipping the links.
    opts = ["-m", "--no-same-owner"] if place.kind == "sshfs" else []
    p = subprocess.run(["tar", "-x", *opts, "-f", tarball, "-C", m.mnt],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert p.returncode == 0, p.stdout.decode(errors="replace")
    want = util.snapshot(src)
    assert util.diff_snapshots(util.snapshot(m.p("tree")), want) == []
    if place.kind != "sshfs":
        assert os.stat(m.p("tree", "hardlink")).st_nlink == 2
    mounter.unmount(m)
    ref = gocryptfs_snapshot(mounter, cd)
    got = {k[len("tree/"):]: v for k, v in ref.items()
           if k.startswith("tree/")}
    assert util.diff_snapshots(got, want) == []


# --- close-to-open ---------------------------------------------------------

def test_close_to_open(place, mounter):
    """After close() on A, B (a second daemon on the other client mount)
    sees the full size and bytes at once, and so does the server."""
    cd = mounter.init(("-gcm", "-plaintextnames"),
                      cipherdir=os.path.join(place.a, "cd"))
    a = mounter.mount(cd)
    b = mounter.mount(os.path.join(place.b, "cd"))
    size = 100000
    for r in range(20):
        data = util.rand_bytes(size, r)
        with open(a.p("f%d" % r), "wb") as f:
            f.write(data)
        srv = os.stat(os.path.join(place.srv, "cd", "f%d" % r)).st_size
        assert srv == util.cipher_size(size, 32), (r, srv)
        assert os.stat(b.p("f%d" % r)).st_size == size, r
        assert util.read_file(b.p("f%d" % r)) == data, r


def test_full_server_disk(backing_sshfs, mounter, request):
    """The server's disk fills up under a stream of writes through veilfs
    on sshfs (a write is answered before the server has it, there and in
    veilfs): the writer learns it from write(), fsync() or close(), never
    sees all of them succeed; what was written before still reads whole."""
    name = request.node.name
    srv = os.path.join(backing_sshfs.export, name)
    os.makedirs(srv)
    with util.tmpfs(srv, "6m"):
        cd = mounter.init(cipherdir=os.path.join(
            backing_sshfs.clients[0], name, "tmpfs", "cd"))
        m = mounter.mount(cd)
        before = util.rand_bytes(100000, 1)
        util.write_file(m.p("before"), before)
        chunk = util.rand_bytes(128 * 1024, 2)
        err = None
        try:
            fd = os.open(m.p("big"), os.O_WRONLY | os.O_CREAT)
            try:
                for _ in range(80):  # 10 MiB
                    os.write(fd, chunk)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as e:
            err = e
        print("error:", err)
        assert err is not None, "10 MiB written to a 6 MiB disk"
        assert err.errno in (errno.ENOSPC, errno.EIO), err
        assert util.read_file(m.p("before")) == before
        os.unlink(m.p("big"))
        mounter.unmount(m)


def test_close_to_open_rewrite_shared(place, mounter):
    """With -sharedstorage nothing is cached: a file B has read, rewritten
    and resized on A, reads new on B right after A's close."""
    cd = mounter.init(cipherdir=os.path.join(place.a, "cd"))
    args = ["-passfile", mounter.passfile, "-sharedstorage"]
    a = mounter.mount(cd, args=args)
    b = mounter.mount(os.path.join(place.b, "cd"), args=args)
    for r in range(12):
        data = util.rand_bytes(5000 + 37000 * (r % 4), 100 + r)
        with open(a.p("same"), "wb") as f:
            f.write(data)
        assert os.stat(b.p("same")).st_size == len(data), r
        assert util.read_file(b.p("same")) == data, r
    if place.kind != "sshfs":  # sshfs numbers its inodes per client
        # the backing's inode number, the same on every mount
        assert os.stat(a.p("same")).st_ino == os.stat(b.p("same")).st_ino


# --- -sharedstorage: concurrent writers ---------------------------------------

def _run_both(fns):
    """Run the callables at once; re-raise the first error."""
    errs = []
    start = threading.Barrier(len(fns))

    def wrap(fn):
        try:
            start.wait()
            fn()
        except BaseException as e:  # noqa: B902 - reported below
            errs.append(e)
    ts = [threading.Thread(target=wrap, args=(fn,)) for fn in fns]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120 * util.SLOW)
    assert not any(t.is_alive() for t in ts), "writer hung"
    if errs:
        raise errs[0]


def _pwrite(path, data, off, flags=0):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | flags, 0o644)
    try:
        if flags & os.O_APPEND:
            os.write(fd, data)
        else:
            os.pwrite(fd, data, off)
    finally:
        os.close(fd)


def _appender(path, recs):
    def fn():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            for r in recs:
                assert os.write(fd, r) == len(r)
        finally:
            os.close(fd)
    return fn


def _shared_mounts(mounter, place, binary=None):
    binary = binary or util.VEILFS_BIN
    cd = mounter.init(binary=binary, cipherdir=os.path.join(place.a, "cd"))
    args = ["-passfile", mounter.passfile, "-sharedstorage"]
    a = mounter.mount(cd, binary=binary, args=args, label="A")
    b = mounter.mount(os.path.join(place.lock_b, "cd"), binary=binary,
                      args=args, label="B")
    return cd, a, b


def test_shared_concurrent_writers(shared_place, mounter):
    cd, a, b = _shared_mounts(mounter, shared_place)
    want = {}
    for r in range(ROUNDS):
        pa = bytes([0x41 + r % 26])
        pb = bytes([0x61 + r % 26])
        # disjoint halves of a new file, block-aligned and not
        n = "half%d" % r
        cut = 65536 if r % 2 else 65536 + 1234
        if r % 4 < 2:  # an empty file (both see it), else a new name
            util.write_file(a.p(n), b"")
        _run_both([lambda: _pwrite(a.p(n), pa * cut, 0),
                   lambda: _pwrite(b.p(n), pb * (131072 - cut), cut)])
        want[n] = pa * cut + pb * (131072 - cut)
        # overlapping ranges: each byte of the overlap is A's or B's
        n = "over%d" % r
        _run_both([lambda: _pwrite(a.p(n), pa * 100000, 0),
                   lambda: _pwrite(b.p(n), pb * 100000, 50000)])
        got = util.read_file(a.p(n))
        assert len(got) == 150000, (n, len(got))
        assert got[:50000] == pa * 50000, n
        assert got[100000:] == pb * 50000, n
        assert set(got[50000:100000]) <= {pa[0], pb[0]}, n
        want[n] = got
        # appends from both at once: every record once, whole
        n = "app%d" % r
        ra = [b"%c%05d" % (pa[0], i) * 100 + b"\n" for i in range(30)]
        rb = [b"%c%05d" % (pb[0], i) * 150 + b"\n" for i in range(30)]
        _run_both([_appender(a.p(n), ra), _appender(b.p(n), rb)])
        got = util.read_file(a.p(n))
        assert len(got) == sum(map(len, ra + rb)), (n, len(got))
        assert sorted(got.splitlines(keepends=True)) == sorted(ra + rb), n
        want[n] = got
        # a truncate on A while B writes past the new end. The kernel
        # sends B's write in page pieces (50000, 53248, 57344): the
        # truncate comes before, after or between them; a piece it cut
        # away reads as zeros.
        n = "trunc%d" % r
        old = util.rand_bytes(100000, r)
        util.write_file(a.p(n), old)

        def cut():
            os.truncate(a.p(n), 30000)
        _run_both([cut, lambda: _pwrite(b.p(n), pb * 10000, 50000)])
        got = util.read_file(b.p(n))
        if len(got) == 30000:
            assert got == old[:30000], n
        else:
            assert len(got) == 60000, (n, len(got))
            assert got[:50000] == old[:30000] + bytes(20000), n
            for lo, hi in ((50000, 53248), (53248, 57344)):
                assert got[lo:hi] in (pb * (hi - lo), bytes(hi - lo)), n
            assert got[57344:] == pb * (60000 - 57344), n
        want[n] = got
        for name in ("half%d", "over%d", "app%d", "trunc%d"):
            name %= r
            assert util.read_file(a.p(name)) == want[name], name
            assert util.read_file(b.p(name)) == want[name], name
    for name, data in want.items():  # later rounds left them alone
        assert util.read_file(b.p(name)) == data, name
    mounter.unmount(a)
    mounter.unmount(b)
    ref = gocryptfs_snapshot(mounter, cd)
    for name, data in want.items():
        assert ref[name][3] == hashlib.sha256(data).hexdigest(), name


def test_shared_hard_links(shared_place, mounter):
    """-sharedstorage: two names of one file are two inodes; writers
    through both at once still serialise (on the backing file's locks)."""
    if shared_place.kind == "sshfs":
        pytest.skip("sshfs makes two names of one file two files, each "
                    "with locks of its own (veilfs(1))")
    cd, a, b = _shared_mounts(mounter, shared_place)
    for r in range(ROUNDS):
        n, l = "h%d" % r, "l%d" % r
        util.write_file(a.p(n), b"")
        os.link(a.p(n), a.p(l))
        _run_both([lambda: _pwrite(a.p(n), b"N" * 70000, 0),
                   lambda: _pwrite(a.p(l), b"L" * 70000, 70000),
                   lambda: _pwrite(b.p(l), b"M" * 10000, 140000)])
        want = b"N" * 70000 + b"L" * 70000 + b"M" * 10000
        assert util.read_file(a.p(l)) == want, r
        assert util.read_file(b.p(n)) == want, r


def test_shared_storage_ignores_kernel_cache(tmp_path, mounter):
    """-kernel_cache keeps a file's pages across opens; another mount's
    change that keeps the size and the mtime would then never show. Under
    -sharedstorage it is ignored, with a line that says so."""
    place = Place(None, "local", str(tmp_path))
    cd = mounter.init(cipherdir=os.path.join(place.a, "cd"))
    a = mounter.mount(cd, args=["-passfile", mounter.passfile,
                                "-sharedstorage", "-kernel_cache"])
    b = mounter.mount(os.path.join(place.b, "cd"),
                      args=["-passfile", mounter.passfile, "-sharedstorage"])
    assert "-kernel_cache is ignored with -sharedstorage" in a.log()
    old, new = b"o" * 8192, b"n" * 8192
    util.write_file(b.p("f"), old)
    assert util.read_file(a.p("f")) == old  # in a's page cache now
    back = util.only_backing_file(cd)
    st = os.stat(back)
    util.write_file(b.p("f"), new)
    os.utime(back, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert util.read_file(a.p("f")) == new


def test_shared_directory_made_anew(shared_place, mounter):
    """B has listed directory D; A removes D and makes a new D (a new IV)
    with a file in it: B's next listing shows that file, B reads it and a
    file B makes there is A's to read, within the second -sharedstorage
    believes an IV (sshfs shows the new D as the same inode as the old:
    B once kept the old IV for good, listed D as empty and named its new
    file with a dead IV, which nobody could read)."""
    import time

    place = shared_place
    cd = mounter.init(cipherdir=os.path.join(place.a, "cd"))
    args = ["-passfile", mounter.passfile, "-sharedstorage"]
    a = mounter.mount(cd, args=args, label="A")
    # no writer of one file through both: the other client even on sshfs
    b = mounter.mount(os.path.join(place.b, "cd"), args=args, label="B")
    os.mkdir(a.p("D"))
    util.write_file(a.p("D", "one"), b"one")
    assert os.listdir(b.p("D")) == ["one"]
    assert util.read_file(b.p("D", "one")) == b"one"
    util.write_file(b.p("D", "zero"), b"0")
    subprocess.run(["rm", "-rf", a.p("D")], check=True)
    os.mkdir(a.p("D"))
    util.write_file(a.p("D", "two"), b"two")
    assert os.listdir(b.p("D")) == ["two"]
    deadline = time.monotonic() + 10 * util.SLOW
    while True:
        try:
            assert util.read_file(b.p("D", "two")) == b"two"
            break
        except FileNotFoundError:
            assert time.monotonic() < deadline, "B never found D/two"
            time.sleep(0.2)
    util.write_file(b.p("D", "three"), b"three")
    assert sorted(os.listdir(a.p("D"))) == ["three", "two"]
    assert util.read_file(a.p("D", "three")) == b"three"


def test_shared_fresh_open_after_replace(shared_place, mounter):
    """B holds file F open; A renames F away and writes a new F: a fresh
    open of F on B reads and writes the new file (sshfs shows the new F
    with the old one's inode number: B once read the old file through the
    fd it held, and wrote to the new one)."""
    place = shared_place
    cd = mounter.init(cipherdir=os.path.join(place.a, "cd"))
    args = ["-passfile", mounter.passfile, "-sharedstorage"]
    a = mounter.mount(cd, args=args, label="A")
    b = mounter.mount(os.path.join(place.b, "cd"), args=args, label="B")
    util.write_file(a.p("F"), b"old content\n")
    with open(b.p("F"), "rb") as held:
        assert held.read() == b"old content\n"
        os.rename(a.p("F"), a.p("F.old"))
        util.write_file(a.p("F"), b"new\n")
        assert util.read_file(b.p("F")) == b"new\n"
        with open(b.p("F"), "r+b") as f:
            f.seek(0, os.SEEK_END)
            f.write(b"more\n")
    assert util.read_file(a.p("F")) == b"new\nmore\n"
    assert util.read_file(a.p("F.old")) == b"old content\n"
    assert util.read_file(b.p("F.old")) == b"old content\n"


def test_shared_reader_during_rewrite(shared_place, mounter):
    """A rewrites a 256 KiB file over and over (whole blocks, versions
    v = 0, 1, ...); B reads it meanwhile: never EIO, every block is one
    version of that block."""
    cd, a, b = _shared_mounts(mounter, shared_place)
    nblk = 64

    def block(v, i):
        return bytes([(v * 7 + i) % 256]) * 4096

    util.write_file(a.p("r"), b"".join(block(0, i) for i in range(nblk)))
    done = threading.Event()
    versions = 12 if not LONG else 60

    def writer():
        try:
            fd = os.open(a.p("r"), os.O_WRONLY)
            try:
                for v in range(1, versions + 1):
                    for i in range(0, nblk, 4):
                        os.pwrite(fd, b"".join(block(v, j)
                                               for j in range(i, i + 4)),
                                  i * 4096)
            finally:
                os.close(fd)
        finally:
            done.set()

    reads = [0]

    def reader():
        while not done.is_set() or reads[0] == 0:
            with open(b.p("r"), "rb") as f:
                got = f.read()
            assert len(got) == nblk * 4096
            for i in range(nblk):
                blk = got[i * 4096:(i + 1) * 4096]
                v = next((v for v in range(versions + 1)
                          if blk == block(v, i)), None)
                assert v is not None, "block %d is no version" % i
            reads[0] += 1
    _run_both([writer, reader])
    assert util.read_file(b.p("r")) == b"".join(block(versions, i)
                                                for i in range(nblk))
    assert "is corrupt" not in b.log(), b.log()


def test_reference_gocryptfs_shared_corrupts(mounter, tmp_path):
    """Documents the reference: two gocryptfs -sharedstorage mounts of one
    directory writing the two 64 KiB halves of one empty file at once
    leave files that fail to read (here about one in four; on two MooseFS
    clients gocryptfs also hung in close(), so this runs on a local
    directory). Skipped when it does not happen within the rounds (it
    depends on timing); the assertion that must hold is veilfs's, in
    test_shared_concurrent_writers, which writes the same halves."""
    require_gocryptfs()
    pl = Place(None, "gocryptfs-ref", str(tmp_path))
    _, a, b = _shared_mounts(mounter, pl, binary=util.GOCRYPTFS_BIN)
    bad = 0
    for r in range(20):
        n = "f%d" % r
        util.write_file(a.p(n), b"")
        eio = []

        def half(m, c, off):
            try:
                _pwrite(m.p(n), c * 65536, off)
            except OSError as e:  # its read-modify-write failed
                assert e.errno == errno.EIO, e
                eio.append(e)
        _run_both([lambda: half(a, b"A", 0), lambda: half(b, b"B", 65536)])
        try:
            ok = util.read_file(a.p(n)) == b"A" * 65536 + b"B" * 65536
        except OSError as e:
            assert e.errno == errno.EIO, e
            ok = False
        bad += bool(eio) or not ok
    print("gocryptfs -sharedstorage: %d of 20 files damaged" % bad)
    if not bad:
        pytest.skip("gocryptfs did not corrupt a file in 20 rounds here")
