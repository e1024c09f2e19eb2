# SPDX-License-Identifier: MIT
"""Daemon-specific behaviour of the FUSE layer (src/fs).

- A 33,000-file tree untars, lists and deletes with the daemon's open-file
  limit lowered to 1024 (libfuse's passthrough_hp pins one fd per inode and
  fails here with EMFILE); the daemon's fd count stays bounded throughout.
- Backing files are open only while a FUSE handle is open.
- A hard link stays reachable after the name the daemon knew it by is gone.
- The written tree reads back identically through gocryptfs.
"""

import os
import shutil
import subprocess
import tarfile
import time

import pytest

import util

FD_LIMIT = 1024


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def settled_fd_count(pid, below=None):
    """fd count once FUSE releases (asynchronous) have arrived."""
    last = fd_count(pid)
    for _ in range(100):
        time.sleep(0.05)
        n = fd_count(pid)
        if n == last and (below is None or n <= below):
            return n
        last = n
    return last


def mount_limited(mounter, cipherdir, limit=FD_LIMIT):
    """Mount with RLIMIT_NOFILE lowered through prlimit (which execs the
    daemon, so the pid stays the daemon's)."""
    prlimit = shutil.which("prlimit")
    if not prlimit:
        pytest.skip("prlimit missing")
    mnt = mounter._name("mnt")
    log = mounter._name("daemon") + ".log"
    mounter.logs.append(log)
    m = util.Mount(util.VEILFS_BIN, cipherdir, mnt,
                   ["-passfile", mounter.passfile], log, "fdlimit")
    m.cmd = [prlimit, "--nofile=%d:%d" % (limit, limit)] + m.cmd
    mounter.repro.append(util.quote(m.cmd))
    mounter.mounts.append(m)
    m.start()
    return m


def make_tree_tar(path, ndirs=30, per_dir=1000, flat=3000):
    """A tar of ndirs*per_dir + flat small files (33,000 by default)."""
    src = path + ".src"
    names = []
    for d in range(ndirs):
        dd = os.path.join(src, "d%02d" % d)
        os.makedirs(dd)
        for f in range(per_dir):
            names.append(os.path.join(dd, "file-%04d.txt" % f))
    flatdir = os.path.join(src, "flat")
    os.makedirs(flatdir)
    for f in range(flat):
        names.append(os.path.join(flatdir, "f%05d" % f))
    for n in names:
        with open(n, "w") as fh:
            fh.write(os.path.basename(n))
    with tarfile.open(path, "w") as t:
        t.add(src, arcname=".")
    shutil.rmtree(src)
    return len(names)


@pytest.mark.parametrize("variant", ["gcm", "plaintextnames"])
def test_33000_files_low_fd_limit(mounter, tmp_path, variant):
    from conftest import VARIANTS
    mounter.allow(600)  # 33,000 files: minutes on a loaded machine
    cipherdir = mounter.init(VARIANTS[variant])
    m = mount_limited(mounter, cipherdir)
    pid = m.proc.pid
    tar = str(tmp_path / "tree.tar")
    nfiles = make_tree_tar(tar)

    p = subprocess.Popen(["tar", "xf", tar, "-C", m.mnt])
    peak = 0
    while p.poll() is None:
        peak = max(peak, fd_count(pid))
        try:
            p.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            pass
    assert p.returncode == 0, "untar failed (EMFILE in the daemon?)"
    peak = max(peak, fd_count(pid))

    count = 0
    for root, dirs, files in os.walk(m.mnt):
        for f in files:
            st = os.lstat(os.path.join(root, f))
            assert st.st_size == len(f)
            count += 1
        peak = max(peak, fd_count(pid))
    assert count == nfiles
    with open(m.p("flat", "f02999")) as fh:
        assert fh.read() == "f02999"
    assert len(os.listdir(m.p("flat"))) == 3000

    shutil.rmtree(m.p("flat"))
    subprocess.run(["rm", "-rf"] + [m.p(d) for d in os.listdir(m.mnt)],
                   check=True)
    assert os.listdir(m.mnt) == []
    peak = max(peak, fd_count(pid))
    # Bounded: the dir-fd cache plus a few; far below the file count.
    assert peak < FD_LIMIT - 100, "daemon held %d fds" % peak
    # Nothing left in the backing directory but the config and root IV.
    left = set(os.listdir(cipherdir)) - util.HIDDEN_ROOT
    assert left == set()
    mounter.unmount(m)


def test_fds_only_while_open(mounter):
    cipherdir = mounter.init()
    m = mounter.mount(cipherdir)
    pid = m.proc.pid
    for i in range(200):
        util.write_file(m.p("f%d" % i), b"x" * i)
    base = settled_fd_count(pid)
    # Counted once settled: on a disk, opens in a row start the read-ahead
    # across files (src/fs/ahead.c), whose thread holds an fd or two for
    # a moment.
    handles = [open(m.p("f%d" % i), "rb") for i in range(200)]
    opened = settled_fd_count(pid)
    # Two handles of one file share one backing fd.
    extra = [open(m.p("f%d" % i), "rb") for i in range(100)]
    shared = settled_fd_count(pid)
    for h in handles + extra:
        h.close()
    closed = settled_fd_count(pid, below=base)
    assert opened >= base + 200
    assert shared == opened
    assert closed <= base
    mounter.unmount(m)


def test_hard_link_survives_removal_of_known_name(vfs):
    a, b = vfs.p("a"), vfs.p("b")
    util.write_file(a, b"hello")
    os.link(a, b)
    os.unlink(b)  # the daemon knew the inode last by this name
    st = os.stat(a)
    assert st.st_nlink == 1 and st.st_size == 5
    assert util.read_file(a) == b"hello"
    os.link(a, b)
    os.unlink(a)
    assert util.read_file(b) == b"hello"
    os.chmod(b, 0o600)
    assert os.stat(b).st_mode & 0o777 == 0o600


def test_unlinked_open_file_keeps_working(cvfs):
    p = cvfs.p("f")
    util.write_file(p, b"0123456789" * 1000)
    with open(p, "r+b") as f:
        os.unlink(p)
        f.seek(5000)
        f.write(b"X" * 10)
        f.flush()
        os.fsync(f.fileno())
        st = os.fstat(f.fileno())
        assert st.st_size == 10000
        f.seek(0)
        data = f.read()
    assert data[5000:5010] == b"X" * 10
    assert data[:5000] == (b"0123456789" * 1000)[:5000]


def test_tree_reads_back_with_gocryptfs(mounter, gocryptfs, tmp_path):
    """Deep tree, long names, rename across dirs, then gocryptfs agrees."""
    cipherdir = mounter.init()
    m = mounter.mount(cipherdir)
    want = {}
    deep = m.mnt
    for i in range(12):
        deep = os.path.join(deep, "level%d" % i)
        os.mkdir(deep)
    long_name = "L" * 200
    for i in range(20):
        data = util.rand_bytes(4096 * i + i, seed=i)
        util.write_file(os.path.join(deep, "%s%d" % (long_name[:190], i)),
                        data)
    os.rename(m.p("level0", "level1"), m.p("moved"))
    for root, dirs, files in os.walk(m.mnt):
        for f in files:
            path = os.path.join(root, f)
            want[os.path.relpath(path, m.mnt)] = util.read_file(path)
    mounter.unmount(m)

    g = mounter.mount(cipherdir, binary=gocryptfs,
                      args=["-passfile", mounter.passfile], label="ref")
    got = {}
    for root, dirs, files in os.walk(g.mnt):
        for f in files:
            path = os.path.join(root, f)
            got[os.path.relpath(path, g.mnt)] = util.read_file(path)
    assert got == want
    assert len(got) == 20
    mounter.unmount(g)


def test_exchange_long_names_across_dirs(mounter, gocryptfs):
    cipherdir = mounter.init()
    m = mounter.mount(cipherdir)
    os.mkdir(m.p("d1"))
    os.mkdir(m.p("d2"))
    a, b = m.p("d1", "A" * 220), m.p("d2", "B" * 230)
    util.write_file(a, b"first")
    util.write_file(b, b"second")
    util.renameat2(a, m.p("d2", "A" * 220), 0)
    util.renameat2(m.p("d2", "A" * 220), b, util.RENAME_EXCHANGE)
    assert util.read_file(b) == b"first"
    assert util.read_file(m.p("d2", "A" * 220)) == b"second"
    assert os.listdir(m.p("d1")) == []
    # d1 holds no sidecar any more, d2 exactly one per long name.
    d1 = [e for e in os.listdir(cipherdir) if e != "gocryptfs.conf"
          and e != "gocryptfs.diriv"]
    sidecars = 0
    for e in d1:
        for f in os.listdir(os.path.join(cipherdir, e)):
            sidecars += f.endswith(".name")
    assert sidecars == 2
    mounter.unmount(m)
    g = mounter.mount(cipherdir, binary=gocryptfs,
                      args=["-passfile", mounter.passfile], label="ref")
    assert util.read_file(g.p("d2", "B" * 230)) == b"first"
    assert util.read_file(g.p("d2", "A" * 220)) == b"second"
    assert os.listdir(g.p("d1")) == []
    mounter.unmount(g)


def test_deep_tree_beyond_dir_fd_cache(mounter):
    """More nested directories than the dir-fd cache holds (256 with a
    1024 fd limit): every level is re-reached through its parent."""
    cipherdir = mounter.init()
    m = mount_limited(mounter, cipherdir)
    pid = m.proc.pid
    parts = ["l%03d" % i for i in range(400)]
    path = m.mnt
    for p in parts:
        path = os.path.join(path, p)
        os.mkdir(path)
        util.write_file(os.path.join(path, "f"), p.encode())
    # Paths this deep exceed PATH_MAX: walk with dir fds like find does.
    fd = os.open(m.mnt, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for p in parts:
            nfd = os.open(p, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
            f = os.open("f", os.O_RDONLY, dir_fd=fd)
            assert os.read(f, 10) == p.encode()
            os.close(f)
    finally:
        os.close(fd)
    assert fd_count(pid) < FD_LIMIT - 100
    subprocess.run(["rm", "-rf", m.p(parts[0])], check=True)
    assert os.listdir(m.mnt) == []
    mounter.unmount(m)


def test_mkdir_without_owner_write_keeps_diriv(encvfs):
    d = encvfs.p("ro")
    os.mkdir(d, 0o555)
    assert os.stat(d).st_mode & 0o777 == 0o555
    os.chmod(d, 0o755)
    util.write_file(os.path.join(d, "x"), b"x")
    assert util.read_file(os.path.join(d, "x")) == b"x"
    os.unlink(os.path.join(d, "x"))
    os.rmdir(d)
    assert os.listdir(encvfs.mnt) == []


def test_parallel_readers_and_a_writer(cvfs):
    """Reads run while a writer rewrites whole blocks: every read sees
    either the old or the new content of each block, never an error."""
    import threading
    p = cvfs.p("f")
    size = 4096 * 64
    util.write_file(p, b"a" * size)
    stop = threading.Event()
    errors = []

    def reader():
        fd = os.open(p, os.O_RDONLY | os.O_DIRECT)
        try:
            import mmap
            buf = mmap.mmap(-1, size)
            while not stop.is_set():
                n = os.preadv(fd, [buf], 0)
                data = bytes(buf[:n])
                for i in range(0, n, 4096):
                    blk = data[i:i + 4096]
                    if blk not in (b"a" * 4096, b"b" * 4096):
                        errors.append(i)
                        return
        except OSError as e:
            errors.append(e)
        finally:
            os.close(fd)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    fd = os.open(p, os.O_WRONLY)
    try:
        for k in range(200):
            c = b"b" if k % 2 else b"a"
            os.pwrite(fd, c * 4096 * 8, 4096 * 8 * (k % 8))
    finally:
        os.close(fd)
        stop.set()
        for t in threads:
            t.join()
    assert errors == []


def test_handles_open_at_shutdown_are_freed(mounter):
    """A daemon told to stop (SIGTERM) while programs still hold
    directories and files open in it gets no RELEASE/RELEASEDIR for them:
    it frees them itself and exits 0 (under ASan, LeakSanitizer would
    report the directory handles and listings as leaked)."""
    cipherdir = mounter.init()
    m = mounter.mount(cipherdir)
    os.mkdir(m.p("d"))
    for i in range(20):
        util.write_file(m.p("d", "f%d" % i), b"x" * i)
    fds = []
    for i in range(5):
        fd = os.open(m.p("d"), os.O_RDONLY | os.O_DIRECTORY)
        fds.append(fd)
        assert len(os.listdir(fd)) == 20
    fds.append(os.open(m.p("d", "f3"), os.O_RDONLY))
    m.proc.terminate()
    rc = m.proc.wait(timeout=30 * util.SLOW)
    for fd in fds:
        os.close(fd)
    subprocess.run([util.FUSERMOUNT, "-u", "-z", m.mnt],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    m.returncode = rc
    assert rc == 0, m.log()
    assert not util.suspicious_lines(m.log()), m.log()
