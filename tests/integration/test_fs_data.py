# SPDX-License-Identifier: MIT
"""File contents through a mount, over every variant: open flags (O_TRUNC,
O_APPEND, O_EXCL, O_WRONLY with partial writes), reads and writes around
the 4096-byte block edges, truncate grow/shrink, sparse files and
SEEK_DATA/SEEK_HOLE, fsync, fallocate. Contents are checked against an
in-memory model of the file."""

import errno
import fcntl
import itertools
import mmap
import os
import random
import shutil
import signal
import subprocess
import time

import pytest

import util
from util import expect_errno, read_file, write_file

EDGES = [0, 1, 4095, 4096, 4097, 8191, 8192, 8193, 10000]


def test_create_excl(vfs):
    p = vfs.p("f")
    fd = os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    os.write(fd, b"abc")
    os.close(fd)
    expect_errno(errno.EEXIST, os.open, p, os.O_CREAT | os.O_EXCL |
                 os.O_WRONLY, 0o600)
    os.mkdir(vfs.p("d"))
    expect_errno(errno.EEXIST, os.open, vfs.p("d"), os.O_CREAT |
                 os.O_EXCL | os.O_WRONLY, 0o600)
    expect_errno(errno.EISDIR, os.open, vfs.p("d"), os.O_WRONLY)
    expect_errno(errno.ENOENT, os.open, vfs.p("none"), os.O_RDONLY)
    expect_errno(errno.ENOENT, os.open, vfs.p("nodir", "f"),
                 os.O_CREAT | os.O_WRONLY, 0o600)
    assert read_file(p) == b"abc"
    assert (os.stat(p).st_mode & 0o777) == 0o600


def test_open_trunc(vfs):
    p = vfs.p("f")
    write_file(p, util.rand_bytes(9000, 1))
    fd = os.open(p, os.O_WRONLY | os.O_TRUNC)
    assert os.fstat(fd).st_size == 0
    os.write(fd, b"new")
    os.close(fd)
    assert read_file(p) == b"new"
    # O_TRUNC|O_CREAT on an existing file, O_RDWR
    fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    assert os.read(fd, 10) == b""
    os.write(fd, b"xy")
    os.close(fd)
    assert read_file(p) == b"xy"
    # the backing file shrinks with it (no stale blocks after EOF)
    back = util.only_backing_file(vfs.cipherdir)
    assert os.stat(back).st_size == util.cipher_size(2, vfs.overhead)


def test_open_append(vfs):
    p = vfs.p("f")
    write_file(p, b"0123")
    fd = os.open(p, os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"45")
    os.lseek(fd, 0, os.SEEK_SET)  # ignored by O_APPEND
    os.write(fd, b"x" * 5000)
    os.close(fd)
    assert read_file(p) == b"012345" + b"x" * 5000
    with open(p, "ab") as f:
        f.write(b"END")
    data = read_file(p)
    assert len(data) == 5009 and data.endswith(b"xEND")


def test_wronly_partial_writes(vfs):
    """O_WRONLY opens must still be able to read-modify-write blocks."""
    p = vfs.p("f")
    base = bytearray(util.rand_bytes(12289, 2))
    write_file(p, bytes(base))
    fd = os.open(p, os.O_WRONLY)
    try:
        for off, data in ((1, b"A"), (4095, b"BB"), (4100, b"C" * 10),
                          (8191, b"D" * 4098), (12288, b"E"),
                          (12289, b"F" * 3)):
            assert os.pwrite(fd, data, off) == len(data)
            end = off + len(data)
            if end > len(base):
                base.extend(b"\0" * (end - len(base)))
            base[off:end] = data
        expect_errno(errno.EBADF, os.read, fd, 1)
    finally:
        os.close(fd)
    assert read_file(p) == bytes(base)


def test_read_write_block_edges(vfs):
    """Writes of many lengths at offsets around block edges, each checked
    against a model."""
    p = vfs.p("f")
    model = bytearray()
    fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        seed = 0
        for off in (0, 1, 4095, 4096, 4097, 8191, 8192, 8193):
            for ln in (1, 2, 4095, 4096, 4097, 8193):
                seed += 1
                data = util.rand_bytes(ln, seed)
                os.pwrite(fd, data, off)
                end = off + ln
                if end > len(model):
                    model.extend(b"\0" * (end - len(model)))
                model[off:end] = data
                assert os.fstat(fd).st_size == len(model)
                # read back a window around the write and the whole file
                lo = max(0, off - 3)
                assert os.pread(fd, ln + 6, lo) == bytes(
                    model[lo:lo + ln + 6])
        assert os.pread(fd, len(model) + 100, 0) == bytes(model)
        # reads that cross EOF or start after it
        assert os.pread(fd, 10, len(model) - 3) == bytes(model[-3:])
        assert os.pread(fd, 10, len(model) + 5000) == b""
    finally:
        os.close(fd)
    back = util.only_backing_file(vfs.cipherdir)
    assert os.stat(back).st_size == util.cipher_size(len(model),
                                                     vfs.overhead)


@pytest.mark.parametrize("seed", [1, 2])
def test_random_io_model(cvfs, seed):
    """Random pwrite/truncate/pread sequence checked against a model."""
    rng = random.Random(seed)
    p = cvfs.p("f")
    model = bytearray()
    fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        for i in range(300):
            op = rng.random()
            if op < 0.6:
                off = rng.choice([rng.randrange(0, 40000),
                                  rng.randrange(0, 10) * 4096 +
                                  rng.choice([-1, 0, 1])])
                off = max(off, 0)
                ln = rng.choice([1, 7, 4096, rng.randrange(1, 13000)])
                data = util.rand_bytes(ln, seed * 1000 + i)
                os.pwrite(fd, data, off)
                if off + ln > len(model):
                    model.extend(b"\0" * (off + ln - len(model)))
                model[off:off + ln] = data
            elif op < 0.75:
                size = rng.choice([0, rng.randrange(0, 45000),
                                   rng.randrange(0, 11) * 4096])
                os.ftruncate(fd, size)
                if size < len(model):
                    del model[size:]
                else:
                    model.extend(b"\0" * (size - len(model)))
            else:
                off = rng.randrange(0, len(model) + 100)
                ln = rng.randrange(1, 20000)
                assert os.pread(fd, ln, off) == bytes(model[off:off + ln]), \
                    "mismatch at step %d" % i
            assert os.fstat(fd).st_size == len(model)
    finally:
        os.close(fd)
    assert read_file(p) == bytes(model)


def test_truncate_matrix(vfs):
    """Every grow/shrink between the edge sizes: size, content (old prefix
    then zeros) and ciphertext size."""
    os.mkdir(vfs.p("t"))
    for i, (a, b) in enumerate(itertools.product(EDGES, EDGES)):
        p = vfs.p("t", "f%d" % i)
        data = util.rand_bytes(a, i)
        write_file(p, data)
        os.truncate(p, b)
        assert os.stat(p).st_size == b, (a, b)
        want = data[:b] + b"\0" * max(0, b - a)
        assert read_file(p) == want, (a, b)
    # ftruncate on an open fd, then continue writing
    p = vfs.p("g")
    fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.write(fd, b"a" * 5000)
        os.ftruncate(fd, 4097)
        os.write(fd, b"b")  # fd offset is still 5000: gap of zeros
        assert os.pread(fd, 10000, 0) == b"a" * 4097 + b"\0" * 903 + b"b"
        os.ftruncate(fd, 0)
        assert os.pread(fd, 10, 0) == b""
    finally:
        os.close(fd)


def test_truncate_backing_sizes(vfs):
    """Truncation leaves a ciphertext of exactly the format's size."""
    p = vfs.p("f")
    write_file(p, b"")
    for size in (4097, 10000, 8192, 1, 0, 8193, 4095, 4096, 0):
        os.truncate(p, size)
        back = util.only_backing_file(vfs.cipherdir)
        assert os.stat(back).st_size == util.cipher_size(size, vfs.overhead)
        assert read_file(p) == b"\0" * size


def test_sparse_files(vfs):
    p = vfs.p("holes")
    fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, b"x", 10000)
        assert os.fstat(fd).st_size == 10001
        assert os.pread(fd, 20000, 0) == b"\0" * 10000 + b"x"
        # a far write leaves whole-block holes in the backing file
        os.pwrite(fd, b"far", 50 * 1024 * 1024)
        assert os.fstat(fd).st_size == 50 * 1024 * 1024 + 3
        assert os.pread(fd, 8192, 1024 * 1024) == b"\0" * 8192
        assert os.pread(fd, 10, 50 * 1024 * 1024 - 2) == b"\0\0far"
        # fill a hole partially
        os.pwrite(fd, b"mid", 30000)
        assert os.pread(fd, 6, 29998) == b"\0\0mid\0"
    finally:
        os.close(fd)
    back = util.only_backing_file(vfs.cipherdir)
    st = os.stat(back)
    assert st.st_size == util.cipher_size(50 * 1024 * 1024 + 3,
                                          vfs.overhead)
    assert st.st_blocks * 512 < 1024 * 1024, "holes were written out"
    # write past EOF of a file with a partial last block
    q = vfs.p("grow")
    write_file(q, b"12345")
    with open(q, "r+b") as f:
        f.seek(20000)
        f.write(b"z")
    assert read_file(q) == b"12345" + b"\0" * 19995 + b"z"


def test_seek_data_hole(vfs):
    """SEEK_DATA/SEEK_HOLE results must be consistent with the content
    (exact hole reporting is optional)."""
    p = vfs.p("f")
    size = 1024 * 1024 + 100
    with open(p, "wb") as f:
        f.write(b"d" * 4096)
        f.seek(1024 * 1024)
        f.write(b"e" * 100)
    content = read_file(p)
    assert len(content) == size
    fd = os.open(p, os.O_RDONLY)
    try:
        for off in (0, 100, 4096, 8192, 500000, 1024 * 1024, size - 1):
            d = os.lseek(fd, off, os.SEEK_DATA)
            assert off <= d < size
            assert content[off:d] == b"\0" * (d - off)
            h = os.lseek(fd, off, os.SEEK_HOLE)
            assert off <= h <= size
            assert h in (off, size) or h % 4096 == 0
            assert content[h:h + 1] in (b"\0", b"")
        expect_errno(errno.ENXIO, os.lseek, fd, size, os.SEEK_DATA)
        expect_errno(errno.ENXIO, os.lseek, fd, size + 10, os.SEEK_HOLE)
        # the data after the big hole is found (if holes are reported)
        d = os.lseek(fd, 8192, os.SEEK_DATA)
        assert d in (8192, 1024 * 1024)
    finally:
        os.close(fd)


def test_whole_block_appends_are_visible_at_once(cvfs, mounter):
    """Writes of whole blocks at the end of a file are acknowledged before
    their blocks reach the backing file (once the space is reserved). When
    write() returns, the backing file must already have its new size, and
    every other way in must see the bytes: a second descriptor with
    O_DIRECT (no page cache), an unaligned append, a truncate, a remount."""
    p = cvfs.p("f")
    blk = 4096
    data = b""
    buf = mmap.mmap(-1, 32 * blk)  # page-aligned, for O_DIRECT
    fd = os.open(p, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
    rd = os.open(p, os.O_RDONLY | os.O_DIRECT)
    try:
        for k in range(40):
            chunk = util.rand_bytes(blk * (1 + k % 32), 100 + k)
            assert os.write(fd, chunk) == len(chunk)
            data += chunk
            back = util.only_backing_file(cvfs.cipherdir)
            assert os.stat(back).st_size == util.cipher_size(
                len(data), cvfs.overhead), k
            n = len(chunk)
            assert os.preadv(rd, [buf], len(data) - n) == n, k
            assert buf[:n] == chunk, k
        os.fsync(fd)
    finally:
        os.close(fd)
        os.close(rd)
        buf.close()
    assert read_file(p) == data
    # an unaligned append and a truncate right behind them
    more = util.rand_bytes(3 * blk, 7)
    with open(p, "ab") as f:
        f.write(more)
        f.write(b"tail")
    os.truncate(p, len(data) + blk)
    want = data + more[:blk]
    assert read_file(p) == want
    mounter.unmount(cvfs)
    m = mounter.mount(cvfs.cipherdir)
    assert read_file(os.path.join(m.mnt, "f")) == want


def _traced_preads(pid, action):
    """Run action() while strace records the pread64 calls of every thread
    of process pid; returns those lines of the trace."""
    out = "/tmp/veilfs-preads.%d" % os.getpid()
    st = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=pread64",
                           "-o", out, "-p", str(pid)],
                          stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30 * util.SLOW
        while True:  # attached to every thread?
            tracers = []
            for t in os.listdir("/proc/%d/task" % pid):
                with open("/proc/%d/task/%s/status" % (pid, t)) as f:
                    tracers += [l.split()[1] for l in f
                                if l.startswith("TracerPid:")]
            if tracers and all(t == str(st.pid) for t in tracers):
                break
            assert st.poll() is None, "strace could not attach"
            assert time.monotonic() < deadline, "strace did not attach"
            time.sleep(0.05)
        action()
    finally:
        st.send_signal(signal.SIGINT)
        st.wait(timeout=30 * util.SLOW)
    with open(out) as f:
        lines = [l for l in f if "pread64(" in l]
    os.unlink(out)
    return lines


def read_direct(path, size):
    """The file's bytes through a descriptor of its own with O_DIRECT, which
    the mount's page cache cannot answer: what the backing file holds."""
    buf = mmap.mmap(-1, max(4096, (size + 4095) // 4096 * 4096 + 4096))
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        n = os.preadv(fd, [buf], 0)
        return bytes(buf[:n])
    finally:
        os.close(fd)
        buf.close()


def test_unaligned_appends_keep_the_last_block(cvfs, mounter):
    """tar writes 10 KiB at a time, so every other write starts inside the
    file's last, partial block. The daemon keeps that block's plaintext
    from the write before: such appends never read the backing file back
    (on sshfs or MooseFS that read is a round trip to the server). Then
    every other change around the last block -- an overwrite inside it, a
    shrink to a partial block, a grow, a second descriptor, O_TRUNC --
    leaves exactly the model's bytes on the backing file, as O_DIRECT
    reads, a fresh mount and gocryptfs see them."""
    if util.is_gocryptfs(cvfs.binary):
        pytest.skip("the pread count is veilfs's own")
    if not shutil.which("strace"):
        pytest.skip("no strace (scripts/deps.sh installs it)")
    p = cvfs.p("f")
    chunks = [util.rand_bytes(10240, k) for k in range(24)]
    chunks += [util.rand_bytes(n, n) for n in (1, 4095, 4097, 3, 8191, 5000)]
    fd = os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)

    def appends():
        for c in chunks:
            assert os.write(fd, c) == len(c)
        os.fsync(fd)
    try:
        preads = _traced_preads(cvfs.proc.pid, appends)
    finally:
        os.close(fd)
    assert preads == [], "appends read the backing file:\n" + "".join(
        preads[:10])
    model = bytearray(b"".join(chunks))
    assert read_direct(p, len(model)) == model

    fd = os.open(p, os.O_RDWR)
    fd2 = os.open(p, os.O_WRONLY | os.O_APPEND)
    try:
        r1, r2, r3, r4 = (util.rand_bytes(n, k) for n, k in
                          ((5000, 1), (10240, 2), (3000, 3), (6000, 4)))

        def put(at, data):
            model[at:at + len(data)] = data
        # (what, the change through the mount, the same change to model)
        steps = [
            ("overwrite inside the last block",
             lambda n: os.pwrite(fd, b"XY", n - 3),
             lambda n: put(n - 3, b"XY")),
            ("append after it", lambda n: os.pwrite(fd, r1, n),
             lambda n: put(n, r1)),
            ("shrink to a partial block",
             lambda n: os.ftruncate(fd, n - 4200),
             lambda n: model.__delitem__(slice(n - 4200, None))),
            ("append 10 KiB", lambda n: os.pwrite(fd, r2, n),
             lambda n: put(n, r2)),
            ("grow by a hole", lambda n: os.ftruncate(fd, n + 6000),
             lambda n: put(n, bytes(6000))),
            ("append 7", lambda n: os.pwrite(fd, b"7" * 7, n),
             lambda n: put(n, b"7" * 7)),
            ("append on another descriptor", lambda n: os.write(fd2, r3),
             lambda n: put(n, r3)),
            ("write across the end", lambda n: os.pwrite(fd, r4, n - 2000),
             lambda n: put(n - 2000, r4)),
        ]
        for what, change, expect in steps:
            n = len(model)
            change(n)
            expect(n)
            assert os.fstat(fd).st_size == len(model), what
            assert read_direct(p, len(model)) == model, what
    finally:
        os.close(fd)
        os.close(fd2)
    # O_TRUNC makes a file anew (a new file ID): nothing kept applies
    g = cvfs.p("g")
    write_file(g, util.rand_bytes(10240, 5) + util.rand_bytes(5000, 6))
    again = util.rand_bytes(5000, 7) + util.rand_bytes(5000, 8)
    fd = os.open(g, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, again[:5000])
        os.write(fd, again[5000:])
    finally:
        os.close(fd)
    assert read_direct(g, len(again)) == again
    mounter.unmount(cvfs)
    for binary in (util.VEILFS_BIN, util.GOCRYPTFS_BIN):
        m = mounter.mount(cvfs.cipherdir, binary=binary)
        assert read_file(m.p("f")) == model, binary
        assert read_file(m.p("g")) == again, binary
        mounter.unmount(m)


def test_fsync(vfs):
    p = vfs.p("f")
    fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.write(fd, b"x" * 5000)
        os.fsync(fd)
        os.fdatasync(fd)
    finally:
        os.close(fd)
    os.mkdir(vfs.p("d"))
    dfd = os.open(vfs.p("d"), os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    os.sync()
    # the data is in the backing file: unmount-free check of its size
    back = [n for n in util.backing_entries(vfs.cipherdir)
            if os.path.isfile(os.path.join(vfs.cipherdir, n))]
    assert len(back) == 1
    assert os.stat(os.path.join(vfs.cipherdir, back[0])).st_size == \
        util.cipher_size(5000, vfs.overhead)


def test_fallocate(vfs):
    p = vfs.p("f")
    fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        # mode 0 on an empty file: grows, reads zeros
        util.fallocate(fd, 0, 0, 10000)
        assert os.fstat(fd).st_size == 10000
        assert os.pread(fd, 20000, 0) == b"\0" * 10000
        os.ftruncate(fd, 0)
        os.pwrite(fd, b"a" * 5000, 0)
        # mode 0 past EOF keeps the data, grows with zeros
        util.fallocate(fd, 0, 4000, 4193)
        assert os.fstat(fd).st_size == 8193
        assert os.pread(fd, 9000, 0) == b"a" * 5000 + b"\0" * 3193
        # mode 0 inside the file changes nothing
        util.fallocate(fd, 0, 10, 100)
        assert os.fstat(fd).st_size == 8193
        # KEEP_SIZE: size and content unchanged
        util.fallocate(fd, util.FALLOC_FL_KEEP_SIZE, 0, 100000)
        assert os.fstat(fd).st_size == 8193
        assert os.pread(fd, 9000, 0) == b"a" * 5000 + b"\0" * 3193
        # other modes are not supported
        for mode in (util.FALLOC_FL_PUNCH_HOLE | util.FALLOC_FL_KEEP_SIZE,
                     util.FALLOC_FL_ZERO_RANGE,
                     util.FALLOC_FL_COLLAPSE_RANGE,
                     util.FALLOC_FL_INSERT_RANGE):
            expect_errno(errno.EOPNOTSUPP, util.fallocate, fd, mode, 0, 4096)
        assert os.pread(fd, 9000, 0) == b"a" * 5000 + b"\0" * 3193
        # posix_fallocate works either way
        os.posix_fallocate(fd, 0, 12289)
        assert os.fstat(fd).st_size == 12289
        assert os.pread(fd, 20000, 0) == b"a" * 5000 + b"\0" * 7289
    finally:
        os.close(fd)
    back = util.only_backing_file(vfs.cipherdir)
    assert os.stat(back).st_size == util.cipher_size(12289, vfs.overhead)


def test_empty_file_has_empty_ciphertext(vfs):
    write_file(vfs.p("e"), b"")
    back = util.only_backing_file(vfs.cipherdir)
    assert os.stat(back).st_size == 0
    assert read_file(vfs.p("e")) == b""
    write_file(vfs.p("e"), b"1")
    assert os.stat(back).st_size == util.cipher_size(1, vfs.overhead)


def test_mmap_shared_write(vfs):
    import mmap
    p = vfs.p("f")
    data = bytearray(util.rand_bytes(3 * 4096 + 100, 4))
    write_file(p, bytes(data))
    fd = os.open(p, os.O_RDWR)
    try:
        with mmap.mmap(fd, len(data)) as mm:
            assert mm[:] == bytes(data)
            mm[4090:4106] = b"M" * 16
            mm[-5:] = b"tail!"
            mm.flush()
        data[4090:4106] = b"M" * 16
        data[-5:] = b"tail!"
    finally:
        os.close(fd)
    assert read_file(p) == bytes(data)


def test_copy_file_range_and_sendfile(vfs, tmp_path):
    import shutil
    src = vfs.p("src")
    data = util.rand_bytes(3 * 4096 + 77, 8)
    write_file(src, data)
    # inside the mount (sendfile / copy_file_range paths)
    shutil.copyfile(src, vfs.p("copy1"))
    assert read_file(vfs.p("copy1")) == data
    fi = os.open(src, os.O_RDONLY)
    fo = os.open(vfs.p("copy2"), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        done = 0
        while done < len(data):
            n = os.copy_file_range(fi, fo, len(data) - done, done, done)
            assert n > 0
            done += n
    finally:
        os.close(fi)
        os.close(fo)
    assert read_file(vfs.p("copy2")) == data
    # in and out of the mount
    outside = str(tmp_path / "outside")
    shutil.copyfile(src, outside)
    assert read_file(outside) == data
    shutil.copyfile(outside, vfs.p("copy3"))
    assert read_file(vfs.p("copy3")) == data


@pytest.mark.parametrize("shared", [False, True], ids=["", "sharedstorage"])
def test_append_handle_writes_where_told_once_o_append_is_off(mounter,
                                                              shared):
    """A handle opened with O_APPEND appends while the flag is on; once
    fcntl clears it, a pwrite lands at its offset (it once went to the end
    of the file), also with -sharedstorage, where appends go to the
    backing's own end."""
    cd = mounter.init(("-gcm",))
    args = ["-passfile", mounter.passfile] + (["-sharedstorage"] if shared
                                              else [])
    m = mounter.mount(cd, args=args)
    p = m.p("f")
    write_file(p, b"." * 8192)
    fd = os.open(p, os.O_RDWR | os.O_APPEND)
    try:
        os.write(fd, b"tail")
        fcntl.fcntl(fd, fcntl.F_SETFL, 0)
        os.pwrite(fd, b"AT-ZERO", 0)
    finally:
        os.close(fd)
    want = b"AT-ZERO" + b"." * (8192 - 7) + b"tail"
    assert read_file(p) == want
    mounter.unmount(m)
    assert read_file(mounter.mount(cd, args=args).p("f")) == want


def test_mmap_write_through_an_append_handle_stays_in_place(mounter):
    """Pages written through a shared mapping of a file opened with
    O_RDWR | O_APPEND (fopen's "a+") are written back where they are in
    the file, not appended at its end."""
    cd = mounter.init(("-gcm",))
    args = ["-passfile", mounter.passfile]
    m = mounter.mount(cd, args=args)
    p = m.p("f")
    write_file(p, b"." * 8192)
    fd = os.open(p, os.O_RDWR | os.O_APPEND)
    try:
        with mmap.mmap(fd, 8192) as mm:
            mm[0:6] = b"HEADER"
            mm.flush()
        os.fsync(fd)
    finally:
        os.close(fd)
    want = b"HEADER" + b"." * (8192 - 6)
    assert os.path.getsize(p) == 8192
    assert read_file(p) == want
    mounter.unmount(m)
    assert read_file(mounter.mount(cd, args=args).p("f")) == want
