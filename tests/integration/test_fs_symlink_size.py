# SPDX-License-Identifier: MIT
"""lstat of a symlink shows the length of its plaintext target in every
mode (issue #13, point 4), including padded base64 (-raw64=false, as old
filesystems use), where the stored length alone leaves the padding open.
Checked through lookup and through a listing, and against gocryptfs 2.3 on
the same cipherdir."""

import os

import pytest

import util

# -zerokey mounts: the config is ignored, the flags give the format
MODES = {
    "gcm": [],
    "gcm-padded": ["-raw64=false"],
    "aessiv": ["-aessiv"],
    "aessiv-padded": ["-aessiv", "-raw64=false"],
    "xchacha": ["-xchacha"],
    "xchacha-padded": ["-xchacha", "-raw64=false"],
    "legacy": ["-raw64=false", "-hkdf=false"],
    "legacy-aessiv": ["-aessiv", "-raw64=false", "-hkdf=false"],
    "deterministic-padded": ["-deterministic-names", "-raw64=false"],
    "plaintextnames": ["-plaintextnames"],
}

LENGTHS = list(range(1, 50)) + [100, 255, 1000, 2000]


def _target(n):
    return ("t%d/" % n + "x" * n)[:n]


def _zerokey_dir(path, flags):
    os.makedirs(path)
    if "-plaintextnames" not in flags and \
            "-deterministic-names" not in flags:
        util.write_file(os.path.join(path, "gocryptfs.diriv"),
                        os.urandom(16), 0o400)
    return path


def _sizes(mnt, listing):
    if listing:
        os.listdir(mnt)
    return {n: os.lstat(os.path.join(mnt, "l%d" % n)).st_size
            for n in LENGTHS}


@pytest.mark.parametrize("mode", list(MODES))
def test_symlink_size_exact(mounter, gocryptfs, tmp_path, mode):
    flags = MODES[mode]
    c = _zerokey_dir(str(tmp_path / "zk"), flags)
    args = ["-zerokey"] + flags
    m = mounter.mount(c, args=args)
    for n in LENGTHS:
        os.symlink(_target(n), m.p("l%d" % n))
    want = {n: n for n in LENGTHS}
    assert _sizes(m.mnt, False) == want
    mounter.unmount(m)
    # a fresh mount: sizes from lookup, then from a listing
    for listing in (False, True):
        m = mounter.mount(c, args=args)
        assert _sizes(m.mnt, listing) == want, listing
        assert os.readlink(m.p("l33")) == _target(33)
        mounter.unmount(m)
    g = mounter.mount(c, binary=gocryptfs, args=args)
    assert _sizes(g.mnt, True) == want
    for n in LENGTHS:
        assert os.readlink(g.p("l%d" % n)) == _target(n)
