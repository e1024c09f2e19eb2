# SPDX-License-Identifier: MIT
"""Sparse files as their users copy them (issue #13, points 1 and 2): a
SEEK_DATA/SEEK_HOLE walker and cp copy sparse files from the mount, in every
variant, and the answers are compared with gocryptfs 2.3 on the same
cipherdir; fallocate reserves the same backing space (st_blocks) as
gocryptfs at the block edges.

veilfs reports holes at plaintext block granularity: a block is data when
its whole ciphertext is allocated in the backing file, otherwise it was
never written and reads as zeros. gocryptfs rounds the backing hole offset
up to the next block, so it reports as data every block that shares a
backing filesystem block with data; veilfs's data must therefore lie within
gocryptfs's, and both must cover every non-zero byte."""

import errno
import os
import random
import subprocess

import pytest

import util

B = 4096


def _write_at(path, pieces, size=None):
    """Create PATH with each (offset, bytes) of PIECES written in order,
    then truncate to SIZE if given. Returns the expected content."""
    want = bytearray()
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for off, data in pieces:
            os.pwrite(fd, data, off)
            if len(want) < off + len(data):
                want += b"\0" * (off + len(data) - len(want))
            want[off:off + len(data)] = data
        if size is not None:
            os.ftruncate(fd, size)
            want = want[:size] + b"\0" * (size - len(want))
    finally:
        os.close(fd)
    return bytes(want)


def _fill(n, seed):
    # non-zero bytes, so that "reads as zeros" cannot hide data
    return bytes(b | 1 for b in util.rand_bytes(n, seed))


# name -> (pieces, truncate size, exact data segments). Exact segments are
# given for layouts whose holes are runs of at least two blocks (or lie at
# the start or end): such a hole always owns a backing filesystem block, so
# the answer does not depend on the cipher. None: no exact claim (single
# hole blocks between data may share both their backing blocks with data).
LAYOUTS = {
    # the case: a hole right after the first block
    "hole_after_first": ([(0, _fill(B, 1)), (16 * B, _fill(100, 2)),
                          (200000, b"c")], None,
                         [(0, B), (16 * B, 17 * B), (48 * B, 200001)]),
    "leading_hole": ([(1024 * 1024 + 5, _fill(10, 3))], None,
                     [(256 * B, 1024 * 1024 + 15)]),
    "islands": ([(0, _fill(2 * B, 4)), (5 * B, _fill(3 * B, 5)),
                 (10 * B + 7, _fill(100, 6))], None,
                [(0, 2 * B), (5 * B, 8 * B), (10 * B, 10 * B + 107)]),
    "trailing_hole": ([(0, _fill(100, 7))], 10 * B, [(0, B)]),
    "only_holes": ([], 20 * B, []),
    "big_hole": ([(0, b"start"), (3 * 1024 * 1024 + 5, b"end")], None,
                 [(0, B), (768 * B, 3 * 1024 * 1024 + 8)]),
    "single_holes": ([(0, _fill(B, 8)), (2 * B, _fill(B, 9)),
                      (4 * B, _fill(B + 1, 10))], None, None),
}


def _walk(path):
    """Data segments of PATH by alternating SEEK_DATA and SEEK_HOLE, as
    sparse-aware copy programs do. Fails on a step that does not move
    forward (the walker would loop forever)."""
    segs = []
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        off = 0
        while off < size:
            try:
                d = os.lseek(fd, off, os.SEEK_DATA)
            except OSError as e:
                assert e.errno == errno.ENXIO, e
                break
            assert off <= d < size, (path, off, d)
            h = os.lseek(fd, d, os.SEEK_HOLE)
            assert d < h <= size, "seek loop in %s: SEEK_DATA(%d) = %d, " \
                "SEEK_HOLE(%d) = %d" % (path, off, d, d, h)
            segs.append((d, h))
            off = h
        if size:
            # the implicit hole at the end, or the last byte if a hole
            last = segs and segs[-1][1] == size
            assert os.lseek(fd, size - 1, os.SEEK_HOLE) == (
                size if last else size - 1)
        util.expect_errno(errno.ENXIO, os.lseek, fd, size, os.SEEK_DATA)
        util.expect_errno(errno.ENXIO, os.lseek, fd, size, os.SEEK_HOLE)
    finally:
        os.close(fd)
    return segs


def _walk_copy(src, dst, segs):
    """Copy SRC to a sparse DST reading only the data segments."""
    size = os.stat(src).st_size
    with open(src, "rb") as f, open(dst, "wb") as g:
        for d, h in segs:
            f.seek(d)
            g.seek(d)
            g.write(f.read(h - d))
        g.truncate(size)


def _blocks(segs):
    out = set()
    for d, h in segs:
        out |= set(range(d // B, (h + B - 1) // B))
    return out


def _check_segments(path, want, segs):
    """Everything outside the data segments reads as zeros, and the
    segments start and end at block edges (or at the end of the file)."""
    size = len(want)
    pos = 0
    for d, h in segs:
        assert want[pos:d] == b"\0" * (d - pos), (path, pos, d)
        assert d % B == 0 and (h % B == 0 or h == size), (path, d, h)
        pos = h
    assert want[pos:] == b"\0" * (size - pos), (path, pos)


def _fs_block_size(path):
    return os.statvfs(path).f_bsize


def _make_layouts(root):
    return {name: _write_at(os.path.join(root, name), pieces, size)
            for name, (pieces, size, _) in LAYOUTS.items()}


def test_seek_walker_copies_sparse_files(vfs, mounter, gocryptfs, tmp_path):
    """Every layout is copied exactly by the walker, the data segments are
    exact where the layout allows it, and gocryptfs on the same cipherdir
    reports the same content with a superset of veilfs's data."""
    exact = _fs_block_size(vfs.cipherdir) == B
    wants = _make_layouts(vfs.mnt)
    segs = {}
    for name, want in wants.items():
        p = vfs.p(name)
        segs[name] = _walk(p)
        _check_segments(p, want, segs[name])
        dst = str(tmp_path / ("copy-" + name))
        _walk_copy(p, dst, segs[name])
        assert util.read_file(dst) == want, name
        if exact and LAYOUTS[name][2] is not None:
            assert segs[name] == LAYOUTS[name][2], name
    mounter.unmount(vfs)

    g = mounter.mount(vfs.cipherdir, binary=gocryptfs)
    for name, want in wants.items():
        p = g.p(name)
        gsegs = _walk(p)
        _check_segments(p, want, gsegs)
        dst = str(tmp_path / ("gcopy-" + name))
        _walk_copy(p, dst, gsegs)
        assert util.read_file(dst) == want, name
        assert _blocks(segs[name]) <= _blocks(gsegs), (
            "%s: veilfs reports data where gocryptfs sees a hole: veilfs "
            "%r, gocryptfs %r" % (name, segs[name], gsegs))


@pytest.mark.parametrize("sparse", ["always", "auto"])
def test_cp_sparse(vfs, mounter, gocryptfs, tmp_path, sparse):
    """cp --sparse=always/auto from the mount gives identical, sparse
    copies, from veilfs and from gocryptfs on the same cipherdir."""
    wants = _make_layouts(vfs.mnt)
    out = {}
    for who, m in (("veilfs", vfs), ("gocryptfs", None)):
        if m is None:
            mounter.unmount(vfs)
            m = mounter.mount(vfs.cipherdir, binary=gocryptfs)
        d = tmp_path / ("cp-" + who)
        d.mkdir()
        for name in wants:
            subprocess.run(["cp", "--sparse=" + sparse, m.p(name),
                            str(d / name)], check=True, timeout=60 * util.SLOW)
        out[who] = d
    for name, want in wants.items():
        for who, d in out.items():
            assert util.read_file(str(d / name)) == want, (who, name)
        # the 3 MiB hole is not written out by either copy
        if name == "big_hole":
            st = os.stat(str(out["veilfs"] / name))
            assert st.st_blocks * 512 <= 64 * 1024, st.st_blocks


def test_seek_random_layouts(cvfs, mounter, gocryptfs):
    """Random block writes and truncates: the walker always moves forward,
    covers every written byte, and stays within gocryptfs's data."""
    rng = random.Random(1313)
    wants = {}
    for k in range(12):
        pieces = []
        for _ in range(rng.randrange(1, 8)):
            off = rng.randrange(0, 64) * B + rng.choice((0, 0, 1, 4095))
            pieces.append((off, _fill(rng.choice((1, 100, B, 2 * B + 3)),
                                      100 * k + len(pieces))))
        size = rng.choice((None, None, rng.randrange(1, 80) * B,
                           rng.randrange(1, 300000)))
        wants["r%d" % k] = _write_at(cvfs.p("r%d" % k), pieces, size)
    segs = {}
    for name, want in wants.items():
        segs[name] = _walk(cvfs.p(name))
        _check_segments(name, want, segs[name])
    mounter.unmount(cvfs)
    g = mounter.mount(cvfs.cipherdir, binary=gocryptfs)
    for name, want in wants.items():
        gsegs = _walk(g.p(name))
        _check_segments(name, want, gsegs)
        assert _blocks(segs[name]) <= _blocks(gsegs), (name, segs[name],
                                                       gsegs)


# fallocate cases at the block edges: (existing size, mode, offset, length)
FALLOCATE_CASES = [
    (0, 0, 0, 1), (0, 0, 0, 4095), (0, 0, 0, 4096), (0, 0, 0, 4097),
    (0, 0, 0, 8192), (0, 0, 4095, 2), (0, 0, 4096, 4096), (0, 0, 100, 8000),
    (0, 0, 8192, 1), (5000, 0, 4000, 4193), (5000, 0, 0, 12288),
    (0, 1, 0, 1), (0, 1, 0, 4096), (0, 1, 0, 4097), (0, 1, 4096, 4096),
    (0, 1, 8192, 1), (0, 1, 0, 12288), (0, 1, 0, 40960), (0, 1, 8191, 2),
    (5000, 1, 4096, 8192), (5000, 1, 0, 100), (4096, 1, 4096, 1),
]


def _fallocate_all(root):
    """Run every case on a fresh file; returns {case: (size, st_blocks)}
    seen in the plaintext view."""
    res = {}
    for i, (size, mode, off, length) in enumerate(FALLOCATE_CASES):
        p = os.path.join(root, "fa%d" % i)
        fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            if size:
                os.pwrite(fd, _fill(size, i), 0)
            util.fallocate(fd, mode, off, length)
            os.fsync(fd)
            st = os.fstat(fd)
            res[i] = (st.st_size, st.st_blocks)
        finally:
            os.close(fd)
    return res


@pytest.mark.parametrize("cipher", ["gcm", "aessiv", "xchacha"])
def test_fallocate_blocks_like_gocryptfs(mounter, gocryptfs, cipher):
    """st_blocks after fallocate equals gocryptfs's on the same backing
    filesystem: the reservation ends with the last ciphertext byte that the
    range needs, not with the end of its last full block."""
    flags = {"gcm": ["-gcm"], "aessiv": ["-aessiv"],
             "xchacha": ["-xchacha"]}[cipher]
    got = {}
    for who, binary in (("veilfs", util.VEILFS_BIN), ("gocryptfs",
                                                      gocryptfs)):
        c = mounter.init(flags, binary=binary)
        m = mounter.mount(c, binary=binary)
        got[who] = _fallocate_all(m.mnt)
        mounter.unmount(m)
    diff = ["%r: veilfs %r, gocryptfs %r" % (FALLOCATE_CASES[i],
                                             got["veilfs"][i],
                                             got["gocryptfs"][i])
            for i in got["veilfs"] if got["veilfs"][i] != got["gocryptfs"][i]]
    assert not diff, "\n".join(diff)
