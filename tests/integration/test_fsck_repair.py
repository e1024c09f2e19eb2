# SPDX-License-Identifier: MIT
"""-fsck -repair never gives up good data: a damaged header restored from
the blocks that still open (not judged by one damaged block), and a file
the repair would remove is left in place when its copy in the quarantine
cannot be complete."""

import os
import re
import subprocess

import pytest

import fsck_util as fu
import util
from conftest import require_fuse, require_gocryptfs

ONE = "fsck summary: 1 corrupt files, 0 files skipped"


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    require_fuse()
    require_gocryptfs()
    return fu.make_bases(tmp_path_factory, "fsck-repair-bases")


def _read(mounter, cd, rel):
    m = mounter.mount(cd.path, args=["-passfile", cd.passfile])
    try:
        with open(m.p(rel), "rb") as f:
            return f.read()
    finally:
        mounter.unmount(m)


def _one_problem_repaired(cd, v):
    """v (veilfs -fsck of cd) found one problem, as gocryptfs -fsck does;
    -repair mends it and a new check finds none."""
    assert fu.summary(v.out) == ONE
    assert fu.summary(fu.gfsck(cd).out) == ONE
    r = fu.vfsck(cd, "-repair")
    assert r.returncode == 0, r.out
    assert fu.summary(fu.vfsck(cd).out) == "fsck summary: no problems found"


def _damage_header(p, header, at, bit):
    """Damage the header of backing file p: its version (header ==
    "version"), or bit of the file ID's byte at offset at."""
    fu.writable(p)
    with open(p, "r+b") as f:
        if header == "version":
            f.seek(0)
            f.write(b"\x00\x07")
        else:
            f.seek(at)
            b = f.read(1)
            f.seek(at)
            f.write(bytes([b[0] ^ bit]))


@pytest.mark.parametrize("header", ["version", "file_id"])
def test_a_damaged_header_and_block_0(bases, tmp_path, mounter, header):
    """A file of five blocks whose header (its version bytes, or one bit
    of its file ID) and whose block 0 are both damaged: the header is
    restored from the blocks that still open under it, only block 0 is
    reported and, repaired, reads as zeros; blocks 1-4 keep their data
    (the header was once tried against block 0 alone: every block was
    given up and the whole file zeroed)."""
    cd = bases().copy(str(tmp_path / "c"))
    p = cd.b("big.bin")
    _damage_header(p, header, 9, 1)
    fu.flip(p, fu.block_off(cd, 0))
    v = fu.vfsck(cd)
    assert v.returncode == 26, v.out
    assert fu.problems(v.out) == [
        'fsck: file "/big.bin" (ciphertext "%s"): header is damaged '
        '(restorable); corrupt block 0 of 5' % cd.names["big.bin"]], v.out
    _one_problem_repaired(cd, v)
    got = _read(mounter, cd, "big.bin")
    want = cd.plain["big.bin"]
    assert len(got) == len(want)
    assert got[:4096] == bytes(4096)
    assert got[4096:] == want[4096:]


def _add_file(mounter, cd, rel, data):
    """Write rel through a mount; returns its backing name."""
    before = set(os.listdir(cd.path))
    m = mounter.mount(cd.path, args=["-passfile", cd.passfile])
    try:
        util.write_file(m.p(rel), data)
    finally:
        mounter.unmount(m)
    new = [n for n in set(os.listdir(cd.path)) - before
           if not n.endswith(".name")]
    assert len(new) == 1, new
    return new[0]


@pytest.mark.parametrize("header", ["version", "file_id"])
def test_a_damaged_header_and_blocks_0_to_7(bases, tmp_path, mounter,
                                            header):
    """A file of 20 blocks whose header (its version bytes, or one bit of
    its file ID) and whose blocks 0-7 are all damaged: the header is
    restored from the intact blocks further on, only blocks 0-7 are
    reported and, repaired, read as zeros; blocks 8-19 keep their data
    (the candidate headers were once tried against the first 8 blocks
    with data only: the whole file was given up and read as zeros)."""
    cd = bases().copy(str(tmp_path / "c"))
    data = util.rand_bytes(20 * 4096, 11)
    name = _add_file(mounter, cd, "twenty.bin", data)
    p = os.path.join(cd.path, name)
    _damage_header(p, header, 5, 4)
    for k in range(8):
        fu.flip(p, fu.block_off(cd, k))
    v = fu.vfsck(cd)
    assert v.returncode == 26, v.out
    assert fu.problems(v.out) == [
        'fsck: file "/twenty.bin" (ciphertext "%s"): header is damaged '
        '(restorable); corrupt blocks 0-7 of 20' % name], v.out
    _one_problem_repaired(cd, v)
    got = _read(mounter, cd, "twenty.bin")
    assert len(got) == len(data)
    assert got[:8 * 4096] == bytes(8 * 4096)
    assert got[8 * 4096:] == data[8 * 4096:]


def _recovered(pairs, rel):
    """fu.canonical pairs after rel (a directory in the root) and its
    entries got recovery names; the levels below keep theirs (their IVs
    are intact)."""
    out = []
    for k, v in pairs:
        if k == rel or k.startswith(rel + "/"):
            parts = k.split("/")
            parts[:2] = ["recovered-*"] * len(parts[:2])
            k = "/".join(parts)
        out.append((k, v))
    return sorted(out)


def test_a_directory_without_its_iv_and_its_name(bases, tmp_path, mounter):
    """A directory whose gocryptfs.diriv is lost and whose name lost a
    character (so it does not decrypt): it holds files of ours, so
    -repair gives it a new IV and recovery names, as when only one of the
    two is damaged, and every file in it and below it reads as before;
    none of them goes to the quarantine (it was once taken for a directory
    another program made and moved whole to the quarantine: its files
    vanished from the plaintext view, and the run said repaired)."""
    cd = bases().copy(str(tmp_path / "c"))
    want = fu.expected(cd)
    os.unlink(os.path.join(cd.b("sub"), "gocryptfs.diriv"))
    cname = cd.names["sub"]
    os.rename(cd.b("sub"), os.path.join(cd.path, cname[:-1]))
    v = fu.vfsck(cd)
    assert v.returncode == 26, v.out
    assert "not checked inside" not in v.out, v.out
    assert fu.summary(v.out) == fu.summary(fu.gfsck(cd).out) == ONE
    r = fu.vfsck(cd, "-repair")
    assert r.returncode == 0, r.out
    m = re.search(r"repair summary: (\d+) of (\d+) problems repaired",
                  r.out)
    assert m and m.group(1) == m.group(2), r.out
    # only the long name's old .name file (its entry has a new name)
    assert all(n == "report.txt" or n.endswith(".name")
               for n in os.listdir(fu.quarantine_of(r.out))), r.out
    v2 = fu.vfsck(cd)
    assert fu.summary(v2.out) == "fsck summary: no problems found", v2.out
    want["xattrs"]["sub"] = None  # read by its old name
    got = fu.mounted_trees(mounter, cd, util.GOCRYPTFS_BIN)
    assert fu.canonical(got) == _recovered(fu.canonical(want), "sub")


def test_a_foreign_directory_goes_to_the_quarantine(bases, tmp_path,
                                                    mounter):
    """A directory another program made in the cipherdir (no diriv, a name
    that does not decrypt, nothing in it written with our key) is still
    moved whole to the quarantine, and the view stays as it was."""
    cd = bases().copy(str(tmp_path / "c"))
    want = fu.expected(cd)
    os.mkdir(os.path.join(cd.path, "Xforeign"))
    util.write_file(os.path.join(cd.path, "Xforeign", "notes.txt"),
                    b"not encrypted, " * 100)
    r = fu.vfsck(cd, "-repair")
    assert r.returncode == 0, r.out
    qdir = fu.quarantine_of(r.out)
    q = [n for n in os.listdir(qdir) if n.endswith("-Xforeign")]
    assert len(q) == 1, r.out
    with open(os.path.join(qdir, q[0], "notes.txt"), "rb") as f:
        assert f.read() == b"not encrypted, " * 100
    assert not os.path.exists(os.path.join(cd.path, "Xforeign"))
    got = fu.mounted_trees(mounter, cd, util.GOCRYPTFS_BIN)
    assert fu.canonical(got) == fu.canonical(want)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a ramfs")
def test_no_removal_when_the_copy_cannot_keep_the_attributes(bases,
                                                             tmp_path):
    """A file cut to 10 bytes (shorter than a header), which the repair
    empties after copying it to the quarantine, has an encrypted extended
    attribute; the quarantine is on a ramfs, which holds no user
    attributes: the copy would lose it, so the file stays as it is, with
    its attribute, and is reported as not repaired (the attribute was
    once dropped silently)."""
    cd = bases().copy(str(tmp_path / "c"))
    p = cd.b("a.txt")
    attrs = {n: os.getxattr(p, n) for n in os.listxattr(p)
             if n.startswith("user.gocryptfs.")}
    assert attrs
    fu.writable(p)
    os.truncate(p, 10)
    with open(p, "rb") as f:
        data = f.read()
    q = str(tmp_path / "ramq")
    os.mkdir(q)
    subprocess.run(["mount", "-t", "ramfs", "ramfs", q], check=True)
    try:
        r = fu.vfsck(cd, "-repair", "-quarantine", os.path.join(q, "q"))
        assert r.returncode == 26, r.out
        # a.txt has a second name, hard.txt: either may be the one named
        assert any(line.startswith("fsck: not repaired: ") and
                   ('"/a.txt"' in line or '"/hard.txt"' in line)
                   for line in r.out.splitlines()), r.out
        with open(p, "rb") as f:
            assert f.read() == data
        assert {n: os.getxattr(p, n) for n in attrs} == attrs
    finally:
        subprocess.run(["umount", "-l", q])
