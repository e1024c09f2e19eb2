# SPDX-License-Identifier: MIT
"""veilfs as the upper layer of an overlayfs (issue #13, point 3):
renameat2(RENAME_WHITEOUT) leaves a 0/0 character device under the old
(encrypted) name, as gocryptfs does, so overlayfs can delete and rename
lower entries in the merged view. Files are created, deleted and renamed
there; the whiteouts show as such in the veilfs mount, after a remount and
through gocryptfs on the same cipherdir, and the upper layer looks as
gocryptfs's does after the same steps. O_TMPFILE is refused with
EOPNOTSUPP, as by gocryptfs (libfuse 3.14 has no tmpfile operation)."""

import errno
import os
import stat
import subprocess

import pytest

import util
from util import expect_errno, read_file, write_file

RENAME_WHITEOUT = 4
LONG = "L" * 200


def _is_whiteout(path):
    st = os.lstat(path)
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def _listing(root):
    """{relpath: kind} of a tree; whiteouts are 'whiteout'."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            if _is_whiteout(p):
                out[rel] = "whiteout"
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = "dir"
            elif stat.S_ISREG(st.st_mode):
                out[rel] = "file:" + read_file(p).decode()
            else:
                out[rel] = "other:%o" % st.st_mode
    return out


def test_rename_whiteout(vfs, mounter, gocryptfs):
    """renameat2(RENAME_WHITEOUT) directly: the source moves, a whiteout
    takes its name (long names keep their sidecar for it), and
    NOREPLACE still applies."""
    write_file(vfs.p("a"), b"A")
    write_file(vfs.p(LONG), b"long")
    os.mkdir(vfs.p("d"))
    write_file(vfs.p("d", "in"), b"in")
    os.mkdir(vfs.p("empty"))
    util.renameat2(vfs.p("a"), vfs.p("b"), RENAME_WHITEOUT)
    util.renameat2(vfs.p(LONG), vfs.p("M" * 190), RENAME_WHITEOUT)
    # a directory onto an empty directory (which holds its diriv)
    util.renameat2(vfs.p("d"), vfs.p("empty"), RENAME_WHITEOUT)
    write_file(vfs.p("c"), b"C")
    expect_errno(errno.EEXIST, util.renameat2, vfs.p("c"), vfs.p("b"),
                 RENAME_WHITEOUT | util.RENAME_NOREPLACE)
    want = {"a": "whiteout", "b": "file:A", LONG: "whiteout",
            "M" * 190: "file:long", "d": "whiteout", "empty": "dir",
            "empty/in": "file:in", "c": "file:C"}
    assert _listing(vfs.mnt) == want
    mounter.unmount(vfs)
    m = mounter.mount(vfs.cipherdir)
    assert _listing(m.mnt) == want
    # gone again like any entry: unlink of a whiteout
    os.unlink(m.p(LONG))
    del want[LONG]
    assert _listing(m.mnt) == want
    mounter.unmount(m)
    g = mounter.mount(vfs.cipherdir, binary=gocryptfs)
    assert _listing(g.mnt) == want


class Overlay:
    def __init__(self, lower, upper, work, merged):
        self.merged = merged
        os.makedirs(merged, exist_ok=True)
        os.makedirs(upper, exist_ok=True)
        os.makedirs(work, exist_ok=True)
        p = subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                            "lowerdir=%s,upperdir=%s,workdir=%s"
                            % (lower, upper, work), merged],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if p.returncode:
            msg = p.stdout.decode(errors="replace")
            if os.geteuid() != 0 and not util.IN_CI:
                pytest.skip("overlayfs mount needs root: " + msg)
            raise AssertionError("overlayfs mount failed: " + msg)
        self.up = True

    def umount(self):
        if self.up:
            self.up = False
            subprocess.run(["umount", self.merged], check=True)

    def kill(self):
        if self.up:
            self.up = False
            subprocess.run(["umount", "-l", self.merged])


def _lower(root):
    os.makedirs(root)
    write_file(os.path.join(root, "lf"), b"lower file")
    write_file(os.path.join(root, "keep"), b"keep")
    write_file(os.path.join(root, "ren"), b"to rename")
    write_file(os.path.join(root, LONG), b"long lower")
    os.mkdir(os.path.join(root, "ld"))
    write_file(os.path.join(root, "ld", "inner"), b"inner")
    os.mkdir(os.path.join(root, "lsub"))
    write_file(os.path.join(root, "lsub", "x"), b"x")


def _steps(merged):
    """What a container does in the merged view."""
    def j(*a):
        return os.path.join(merged, *a)

    write_file(j("nf"), b"new")
    os.mkdir(j("nd"))
    write_file(j("nd", "f"), b"nd/f")
    os.unlink(j("lf"))
    os.unlink(j(LONG))
    subprocess.run(["rm", "-r", j("ld")], check=True)
    os.rename(j("ren"), j("renamed"))
    os.rename(j("nf"), j("nf2"))
    with open(j("keep"), "ab") as f:
        f.write(b"+more")
    os.unlink(j("lsub", "x"))
    # a deleted lower name created again
    write_file(j("lf"), b"again")


MERGED = {"keep": "file:keep+more", "renamed": "file:to rename",
          "nf2": "file:new", "nd": "dir", "nd/f": "file:nd/f",
          "lsub": "dir", "lf": "file:again"}


def _run_overlay(tmp, m, tag):
    """Lower tree, overlay with upper and work dir in the mount M, the
    steps; returns the listings of the merged view and of the upper."""
    lower = os.path.join(tmp, "lower-" + tag)
    _lower(lower)
    ov = Overlay(lower, m.p("upper"), m.p("work"),
                 os.path.join(tmp, "merged-" + tag))
    try:
        _steps(ov.merged)
        merged = _listing(ov.merged)
        ov.umount()
    finally:
        ov.kill()
    return lower, merged, _listing(m.p("upper"))


def test_overlay_upper(vfs, mounter, gocryptfs, tmp_path):
    tmp = str(tmp_path)
    lower, merged, upper = _run_overlay(tmp, vfs, "v")
    assert merged == MERGED
    for name in (LONG, "ren", "ld", "lsub/x"):
        assert upper.get(name) == "whiteout", (name, upper)
    assert upper["renamed"] == "file:to rename"

    # the same steps with gocryptfs as the upper: the same upper layer
    gc = mounter.init(["-gcm"] + (["-plaintextnames"] if vfs.plaintextnames
                                  else []), binary=gocryptfs)
    g = mounter.mount(gc, binary=gocryptfs)
    _, gmerged, gupper = _run_overlay(tmp, g, "g")
    assert gmerged == MERGED
    assert upper == gupper
    mounter.unmount(g)

    # after a remount of veilfs: the whiteouts are still there, and the
    # overlay shows the same merged view again
    mounter.unmount(vfs)
    m = mounter.mount(vfs.cipherdir)
    assert _listing(m.p("upper")) == upper
    ov = Overlay(lower, m.p("upper"), m.p("work"),
                 os.path.join(tmp, "merged-again"))
    try:
        assert _listing(ov.merged) == MERGED
        ov.umount()
    finally:
        ov.kill()
    mounter.unmount(m)
    # gocryptfs reads the whiteouts veilfs made
    g = mounter.mount(vfs.cipherdir, binary=gocryptfs)
    assert _listing(g.p("upper")) == upper


def _recreate_dirs(root, rounds=20):
    """rmdir and mkdir of one name while the old directory is still open
    (as overlayfs does with its work dir at every mount); the backing
    filesystem tends to give the new directory the old inode number.
    Returns how often that happened; every new directory must take
    entries."""
    reused = 0
    d = os.path.join(root, "dd")
    for i in range(rounds):
        os.mkdir(d)
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        try:
            ino = os.fstat(fd).st_ino
            os.rmdir(d)
            os.mkdir(d)
            reused += os.stat(d).st_ino == ino
            write_file(os.path.join(d, "x"), b"x%d" % i)
            assert read_file(os.path.join(d, "x")) == b"x%d" % i
            os.unlink(os.path.join(d, "x"))
        finally:
            os.close(fd)
        os.rmdir(d)
    return reused


def test_dir_recreated_while_open(vfs, mounter, gocryptfs):
    """A directory removed and made again under the same name while the
    old one is open takes new entries, whether or not the backing
    filesystem reused its inode number; as on gocryptfs."""
    reused = _recreate_dirs(vfs.mnt)
    mounter.unmount(vfs)
    g = mounter.mount(vfs.cipherdir, binary=gocryptfs)
    _recreate_dirs(g.mnt)
    if not reused:
        pytest.skip("the backing filesystem never reused an inode number")


def test_o_tmpfile_unsupported(vfs, mounter, gocryptfs):
    """O_TMPFILE: EOPNOTSUPP from both (what programs fall back on), and
    nothing is left in the cipherdir."""
    before = sorted(os.listdir(vfs.cipherdir))
    e = expect_errno(errno.EOPNOTSUPP, os.open, vfs.mnt,
                     os.O_TMPFILE | os.O_RDWR, 0o600)
    assert sorted(os.listdir(vfs.cipherdir)) == before
    mounter.unmount(vfs)
    g = mounter.mount(vfs.cipherdir, binary=gocryptfs)
    ge = expect_errno(errno.EOPNOTSUPP, os.open, g.mnt,
                      os.O_TMPFILE | os.O_RDWR, 0o600)
    assert e.errno == ge.errno
