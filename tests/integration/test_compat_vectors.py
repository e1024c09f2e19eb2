# SPDX-License-Identifier: MIT
"""The frozen gocryptfs 2.3 filesystems ($VEILFS_VECTORS/<variant>/cipher,
password "test") mount under veilfs and read exactly as their plain/ tree:
content, holes, long names, symlinks and the xattrs user.foo="bar",
user.empty="" on one.txt and user.dirattr on sub/. Read-only mounts leave
the cipherdir untouched; a rw mount of a copy can be changed and the
result still reads correctly through gocryptfs. -masterkey mounts too."""

import errno
import os

import pytest

import util
from compat_tree import modify
from conftest import copy_cipherdir
from util import expect_errno, read_file

VARIANTS = ["gcm", "aessiv", "xchacha", "plaintextnames",
            "deterministic-names", "longnamemax100"]
# Flags a -masterkey mount needs, as the config file is not read then.
MASTERKEY_FLAGS = {
    "gcm": [],
    "aessiv": ["-aessiv"],
    "xchacha": ["-xchacha"],
    # no Raw64 flag in that config: xattr names use padded base64
    "plaintextnames": ["-plaintextnames", "-raw64=false"],
    "deterministic-names": ["-deterministic-names"],
    "longnamemax100": ["-longnamemax", "100"],
}


def _vec(vectors, variant, *rest):
    return os.path.join(vectors, variant, *rest)


def _assert_tree(mnt, want):
    diff = util.diff_snapshots(util.snapshot(mnt), want)
    assert not diff, "\n  ".join(["tree differs:"] + diff[:30])


def _spot_checks(mnt):
    assert os.getxattr(os.path.join(mnt, "one.txt"), "user.foo") == b"bar"
    assert os.getxattr(os.path.join(mnt, "one.txt"), "user.empty") == b""
    assert os.getxattr(os.path.join(mnt, "sub"),
                       "user.dirattr") == b"x" * 10
    assert os.readlink(os.path.join(mnt, "link_rel")) == "one.txt"
    assert os.readlink(os.path.join(mnt, "link_abs")) == "/a/b/c/d"
    assert read_file(os.path.join(mnt, "holes.bin")) == b"\0" * 10000 + b"X"
    assert read_file(os.path.join(mnt, "n" * 176)).startswith(
        b"name of 176 bytes")


@pytest.mark.parametrize("variant", VARIANTS)
def test_vector_reads_as_plain_ro(mounter, vectors, variant):
    cipher = _vec(vectors, variant, "cipher")
    before = util.snapshot(cipher)
    pw = _vec(vectors, variant, "password.txt")
    m = mounter.mount(cipher, args=["-ro", "-passfile", pw])
    _assert_tree(m.mnt, util.snapshot(_vec(vectors, variant, "plain")))
    _spot_checks(m.mnt)
    expect_errno(errno.EROFS, os.open, m.p("new"),
                 os.O_CREAT | os.O_WRONLY, 0o644)
    mounter.unmount(m)
    assert util.snapshot(cipher) == before


@pytest.mark.parametrize("variant", VARIANTS)
def test_vector_copy_rw_then_gocryptfs(mounter, vectors, gocryptfs,
                                       variant, tmp_path):
    cipher = copy_cipherdir(_vec(vectors, variant, "cipher"),
                            str(tmp_path / "vec"))
    pw = _vec(vectors, variant, "password.txt")
    args = ["-passfile", pw]
    m = mounter.mount(cipher, args=args)
    _assert_tree(m.mnt, util.snapshot(_vec(vectors, variant, "plain")))
    # change it the way compat_tree.modify expects its input to look
    os.rename(m.p("L" * 200), m.p("200".ljust(200, "n")))
    for n, src in ((4095, None), (5000, "5000.bin"), (70000, None),
                   (12289, None), (1, "one.txt"), (4096, "4096.bin")):
        dst = m.p("size%d.bin" % n)
        if src:
            os.link(m.p(src), dst)
        else:
            util.write_file(dst, util.rand_bytes(n, n))
    os.mkdir(m.p("emptydir"))
    util.write_file(m.p("private"), b"p", 0o600)
    util.write_file(m.p("hl1"), b"hl")
    os.link(m.p("hl1"), m.p("sub", "hl2"))
    modify(m.mnt)
    want = util.snapshot(m.mnt)
    mounter.unmount(m)
    g = mounter.mount(cipher, binary=gocryptfs, args=args)
    _assert_tree(g.mnt, want)


@pytest.mark.parametrize("variant", VARIANTS)
def test_vector_masterkey_mount(mounter, vectors, variant):
    with open(_vec(vectors, variant, "masterkey.hex")) as f:
        key = f.read().strip()
    cipher = _vec(vectors, variant, "cipher")
    m = mounter.mount(cipher, args=["-ro", "-masterkey", key,
                                    *MASTERKEY_FLAGS[variant]])
    _assert_tree(m.mnt, util.snapshot(_vec(vectors, variant, "plain")))


def _backing_names(cipherdir):
    """{dir: {name: .name sidecar content or None}} of the backing tree."""
    out = {}
    for d, dirs, files in os.walk(cipherdir):
        rel = os.path.relpath(d, cipherdir)
        ent = {}
        for n in dirs + files:
            side = None
            if n.endswith(".name"):
                side = read_file(os.path.join(d, n))
            ent[n] = side
        out[rel] = ent
    return out


def _backing_xattr_names(path):
    return sorted(os.listxattr(path, follow_symlinks=False))


@pytest.mark.parametrize("variant", VARIANTS)
def test_vector_names_reencrypt_identically(mounter, vectors, variant,
                                            tmp_path):
    """Names and xattr names are deterministic given the directory IV: moving
    every entry away and back through veilfs, and setting the xattrs anew,
    must reproduce gocryptfs's backing names byte for byte (long-name
    hashes and .name sidecars included)."""
    cipher = copy_cipherdir(_vec(vectors, variant, "cipher"),
                            str(tmp_path / "vec"))
    names_before = _backing_names(cipher)
    m = mounter.mount(cipher, args=["-passfile",
                                    _vec(vectors, variant, "password.txt")])
    os.mkdir(m.p("parking"))
    for d in ("", "sub"):
        for n in sorted(os.listdir(m.p(d))):
            if n in ("sub", "parking"):
                continue
            os.rename(m.p(d, n), m.p("parking", "x"))
            os.rename(m.p("parking", "x"), m.p(d, n))
    os.rmdir(m.p("parking"))
    # xattr names: remove and set again
    os.removexattr(m.p("one.txt"), "user.foo")
    os.removexattr(m.p("one.txt"), "user.empty")
    os.setxattr(m.p("one.txt"), "user.foo", b"bar")
    os.setxattr(m.p("one.txt"), "user.empty", b"")
    os.removexattr(m.p("sub"), "user.dirattr")
    os.setxattr(m.p("sub"), "user.dirattr", b"x" * 10)
    mounter.unmount(m)
    assert _backing_names(cipher) == names_before
    # same backing names, so compare every object's xattr names pairwise
    orig = _vec(vectors, variant, "cipher")
    for rel, ents in names_before.items():
        for n in ents:
            a = os.path.join(orig, rel, n)
            b = os.path.join(cipher, rel, n)
            if os.path.islink(a):
                continue
            assert _backing_xattr_names(b) == _backing_xattr_names(a), n
