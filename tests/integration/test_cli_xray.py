# SPDX-License-Identifier: MIT
"""veilfs -xray FILE against gocryptfs-xray 2.3, side by side (issue #15,
point 4): the same output, byte for byte, and the same exit code for every
file of the vector cipherdirs in each of the three layouts (-aessiv,
-xchacha, GCM), for files with holes and many blocks written through veilfs
with every cipher, and for broken files (empty, header only, truncated
tails, zero or wrong headers, directories, missing files). Also
-dumpmasterkey CONFIG, with and without -xray."""

import os
import stat
import subprocess

import pytest

import cli_util as cu
import util

MODES = {"gcm": [], "aessiv": ["-aessiv"], "xchacha": ["-xchacha"]}


@pytest.fixture(autouse=True)
def _prereqs():
    for ok, what in ((os.access(cu.VEILFS, os.X_OK), "veilfs binary"),
                     (cu.XRAY, "gocryptfs-xray"),
                     (os.path.isdir(cu.vector_dir("gcm")), "test vectors")):
        if not ok:
            if util.IN_CI:
                pytest.fail("%s is missing (CI=true: not skipping)" % what)
            pytest.skip("%s is missing" % what)


def _both(path, mode_flags):
    v = cu.run([cu.VEILFS, "-xray"] + mode_flags + [path], timeout=60)
    g = cu.run([cu.XRAY] + mode_flags + [path], timeout=60)
    return v, g


def _same(path, mode_flags):
    v, g = _both(path, mode_flags)
    assert v.stdout == g.stdout, "%s %s:\nveilfs:\n%s\ngocryptfs-xray:\n%s" % (
        path, mode_flags, v.stdout.decode(errors="replace")[:2000],
        g.stdout.decode(errors="replace")[:2000])
    assert v.returncode == g.returncode, (path, mode_flags, v.returncode,
                                          g.returncode)
    assert v.stderr == b"", v.stderr
    return v


def _files(root):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for n in sorted(filenames):
            p = os.path.join(dirpath, n)
            if stat.S_ISREG(os.lstat(p).st_mode):
                out.append(p)
    return out


@pytest.mark.parametrize("variant", cu.FORWARD_VECTORS)
def test_xray_vector_files(variant):
    """Every regular file of a vector cipherdir (contents, config, diriv,
    .name sidecars), in every layout."""
    files = _files(os.path.join(cu.vector_dir(variant), "cipher"))
    assert len(files) > 10
    ok = 0
    for p in files:
        for flags in MODES.values():
            v = _same(p, flags)
            ok += v.returncode == 0
    assert ok > len(files)  # most files parse in at least their own mode


def test_xray_both_modes_given():
    """-aessiv wins over -xchacha, as in gocryptfs-xray."""
    for p in _files(os.path.join(cu.vector_dir("xchacha"), "cipher"))[:8]:
        _same(p, ["-xchacha", "-aessiv"])
        _same(p, ["-aessiv", "-xchacha"])


@pytest.mark.parametrize("cipher", list(MODES))
def test_xray_written_files(mounter, cipher):
    """Files written through veilfs: holes, many blocks (block numbers of
    three digits and more, offsets beyond five digits), partial tails."""
    c = mounter.init(["-" + cipher] if cipher != "gcm" else ["-gcm"])
    m = mounter.mount(c)
    with open(m.p("sparse"), "wb") as f:
        f.write(b"a")
        f.seek(1000 * 4096 + 7)
        f.write(b"z" * 5000)
    util.write_file(m.p("dense"), util.rand_bytes(150 * 4096 + 3, 15))
    for n in (1, 4095, 4096, 4097, 8192):
        util.write_file(m.p("s%d" % n), util.rand_bytes(n, n))
    os.truncate(m.p("s8192"), 3 * 4096)  # trailing hole blocks
    mounter.unmount(m)
    files = [p for p in _files(c)
             if os.path.basename(p) not in ("gocryptfs.conf",
                                            "gocryptfs.diriv")]
    assert len(files) == 7
    for p in files:
        for flags in MODES.values():
            _same(p, flags)
        v = _same(p, MODES[cipher])
        assert v.returncode == 0 and v.stdout.startswith(b"Header: ")


def test_xray_broken_files(tmp_path):
    """The messages and exit codes for files that are not (or no longer)
    ciphertext, in every layout."""
    src = util.read_file(os.path.join(
        cu.vector_dir("gcm"), "cipher", "lhJNt-bz2m8ljrpvVas3gg"))
    hdr = src[:18]
    cases = {
        "empty": b"",
        "short-header": hdr[:10],
        "header-only": hdr,
        "zero-header": b"\0" * 18 + src[18:100],
        "zero-id": b"\0\2" + b"\0" * 16 + src[18:100],
        "version-3": b"\0\3" + hdr[2:] + src[18:100],
    }
    for n in list(range(1, 45)) + [4127, 4128, 4129, 4135, 4136, 4137,
                                   4128 + 33, 4136 + 41]:
        cases["tail%d" % n] = hdr + util.rand_bytes(n, n)
    for name, data in cases.items():
        p = str(tmp_path / name)
        util.write_file(p, data)
        for flags in MODES.values():
            _same(p, flags)
    _same(str(tmp_path / "does-not-exist"), [])
    os.mkdir(str(tmp_path / "adir"))
    _same(str(tmp_path / "adir"), [])
    os.symlink(str(tmp_path / "tail33"), str(tmp_path / "link"))
    _same(str(tmp_path / "link"), [])
    # a FIFO: gocryptfs-xray would wait for a writer; veilfs does not
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    v = cu.run([cu.VEILFS, "-xray", fifo], timeout=30)
    assert v.returncode == 0 and v.stdout == b"empty file\n"


def test_xray_usage():
    v = cu.run([cu.VEILFS, "-xray"], timeout=30)
    assert v.returncode == 1
    v = cu.run([cu.VEILFS, "-xray", "a", "b"], timeout=30)
    assert v.returncode == 1


@pytest.mark.parametrize("variant", ["gcm", "xchacha", "reverse"])
def test_dumpmasterkey_config(variant):
    """-dumpmasterkey CONFIG (the file, as gocryptfs-xray takes it), also
    spelled -xray -dumpmasterkey; and CIPHERDIR as before."""
    if variant == "reverse":
        d = os.path.join(cu.vector_dir(variant), "plain")
        conf = os.path.join(d, ".gocryptfs.reverse.conf")
    else:
        d = os.path.join(cu.vector_dir(variant), "cipher")
        conf = os.path.join(d, "gocryptfs.conf")
    want = cu.vector_key(variant)
    assert cu.xray_key(conf, cu.PASSWORD) == want
    for args in (["-xray", "-dumpmasterkey", conf], ["-dumpmasterkey", conf]):
        p = cu.veilfs(*args, stdin="test\n")
        assert p.returncode == 0, (args, p.err)
        assert p.out == want + "\n"
    extra = ["-reverse"] if variant == "reverse" else []
    assert cu.veilfs_key(d, cu.PASSWORD, *extra) == want
    p = cu.veilfs("-xray", "-dumpmasterkey", conf, stdin="wrong\n")
    assert p.returncode == 12
    assert subprocess.run([cu.XRAY, "-dumpmasterkey", conf],
                          input=b"wrong\n", capture_output=True).returncode
