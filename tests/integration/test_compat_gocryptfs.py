# SPDX-License-Identifier: MIT
"""On-disk compatibility with the real gocryptfs 2.3 binary, both ways:
a tree written through veilfs reads back identically through gocryptfs on
the same cipherdir, gocryptfs then changes it, and veilfs reads the result
-- and the same starting from a cipherdir made and filled by gocryptfs.
Covers every cipher, -plaintextnames, -deterministic-names and
-longnamemax 100, with xattrs, symlinks, long names and holes."""

import pytest

import util
from compat_tree import INIT_VARIANTS, modify, populate


def _check_same(mnt, want, who):
    got = util.snapshot(mnt)
    diff = util.diff_snapshots(got, want)
    assert not diff, "%s sees a different tree:\n  %s" % (
        who, "\n  ".join(diff[:30]))


def _roundtrip(mounter, first, second, flags):
    cipherdir = mounter.init(flags, binary=first)
    m = mounter.mount(cipherdir, binary=first)
    populate(m.mnt)
    want = util.snapshot(m.mnt)
    mounter.unmount(m)

    m = mounter.mount(cipherdir, binary=second)
    _check_same(m.mnt, want, second)
    modify(m.mnt)
    want = util.snapshot(m.mnt)
    mounter.unmount(m)

    m = mounter.mount(cipherdir, binary=first)
    _check_same(m.mnt, want, first)
    mounter.unmount(m)


@pytest.mark.parametrize("variant", list(INIT_VARIANTS))
def test_veilfs_writes_gocryptfs_reads(mounter, gocryptfs, variant):
    _roundtrip(mounter, util.VEILFS_BIN, gocryptfs, INIT_VARIANTS[variant])


@pytest.mark.parametrize("variant", list(INIT_VARIANTS))
def test_gocryptfs_writes_veilfs_reads(mounter, gocryptfs, variant):
    _roundtrip(mounter, gocryptfs, util.VEILFS_BIN, INIT_VARIANTS[variant])


def test_both_mounted_readonly_at_once(mounter, gocryptfs):
    """gocryptfs -ro and veilfs -ro on one cipherdir see the same tree."""
    cipherdir = mounter.init(binary=util.VEILFS_BIN)
    m = mounter.mount(cipherdir)
    populate(m.mnt)
    mounter.unmount(m)
    ro = ["-ro", "-passfile", mounter.passfile]
    a = mounter.mount(cipherdir, binary=util.VEILFS_BIN, args=ro)
    b = mounter.mount(cipherdir, binary=gocryptfs, args=ro)
    assert util.diff_snapshots(util.snapshot(a.mnt),
                               util.snapshot(b.mnt)) == []
