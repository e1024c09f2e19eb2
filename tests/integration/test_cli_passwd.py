# SPDX-License-Identifier: MIT
"""-passwd as gocryptfs 2.3 (Debian 12) does it (issue #13, points 5 and
6): the old and the new password both come from -extpass or -passfile when
given, so scripts work without a terminal; and a legacy filesystem without
HKDF (gocryptfs <= 1.2, crafted here per spec §1.6) is re-wrapped in its
own layout, with or without -masterkey, after which the new password mounts
it under veilfs and under gocryptfs. Every case runs side by side with
gocryptfs 2.3 on a copy of the same cipherdir."""

import base64
import hashlib
import json
import os
import stat
import subprocess

import pytest

import cli_util as cu
import util
from cli_util import gocryptfs, veilfs
from compat_tree import populate

# a script's view: no terminal, nothing on stdin
NO_INPUT = b""


@pytest.fixture(autouse=True)
def _prereqs():
    for ok, what in ((os.access(cu.VEILFS, os.X_OK), "veilfs binary"),
                     (cu.GOCRYPTFS and cu.XRAY,
                      "gocryptfs / gocryptfs-xray"),
                     (os.path.isdir(cu.vector_dir("gcm")), "test vectors")):
        if not ok:
            if util.IN_CI:
                pytest.fail("%s is missing (CI=true: not skipping)" % what)
            pytest.skip("%s is missing" % what)


def _conf(d):
    with open(os.path.join(d, "gocryptfs.conf")) as f:
        return json.load(f)


def _extpass(tmp, name, answers):
    """A program that prints answers[i] on its i-th run (and counts the
    runs in <name>.count)."""
    count = os.path.join(tmp, name + ".count")
    script = os.path.join(tmp, name)
    with open(script, "w") as f:
        f.write("#!/bin/sh\nn=$(cat %s 2>/dev/null || echo 0)\n"
                "n=$((n + 1)); echo $n > %s\n" % (count, count))
        f.write('case $n in\n')
        for i, a in enumerate(answers):
            f.write("%d) echo '%s' ;;\n" % (i + 1, a))
        f.write("*) exit 1 ;;\nesac\n")
    os.chmod(script, 0o755)

    def runs():
        try:
            with open(count) as f:
                return int(f.read())
        except FileNotFoundError:
            return 0
    return script, runs


def _copies(tmp, src):
    """Two copies of cipherdir src: one for veilfs, one for gocryptfs."""
    out = {}
    for who in ("veilfs", "gocryptfs"):
        out[who] = os.path.join(tmp, "%s-%s" % (os.path.basename(src), who))
        # cp -a: the tree may hold fifos, and xattrs must come along
        subprocess.run(["cp", "-a", src, out[who]], check=True)
    return out


RUN = {"veilfs": veilfs, "gocryptfs": gocryptfs}


def test_passwd_extpass_old_and_new(tmp_path):
    """-extpass runs once for the old and once for the new password."""
    tmp = str(tmp_path)
    dirs = _copies(tmp, os.path.join(cu.vector_dir("gcm"), "cipher"))
    for who, d in dirs.items():
        script, runs = _extpass(tmp, "ext-" + who, [cu.PASSWORD, "fresh"])
        p = RUN[who]("-passwd", "-extpass", script, d, stdin=NO_INPUT)
        assert p.returncode == 0, (who, p.err)
        assert runs() == 2, who
        conf = os.path.join(d, "gocryptfs.conf")
        assert cu.xray_key(conf, "fresh") == cu.vector_key("gcm"), who
        assert veilfs("-dumpmasterkey", d, stdin="test\n").returncode == 12
        assert stat.S_IMODE(os.stat(conf).st_mode) == 0o400
    # the same fields changed in both
    a, b = _conf(dirs["veilfs"]), _conf(dirs["gocryptfs"])
    for c in (a, b):
        assert c["FeatureFlags"] == _conf(os.path.join(
            cu.vector_dir("gcm"), "cipher"))["FeatureFlags"]
    assert a["ScryptObject"]["N"] == b["ScryptObject"]["N"]
    assert len(a["EncryptedKey"]) == len(b["EncryptedKey"])


def test_passwd_passfile_gives_both(tmp_path):
    """-passfile gives the new password as well: the key is re-wrapped
    with the same password (fresh salt and nonce), as with gocryptfs."""
    tmp = str(tmp_path)
    dirs = _copies(tmp, os.path.join(cu.vector_dir("gcm"), "cipher"))
    pwfile = util.write_passfile(os.path.join(tmp, "pw"))
    before = _conf(dirs["veilfs"])
    for who, d in dirs.items():
        p = RUN[who]("-passwd", "-passfile", pwfile, d, stdin=NO_INPUT)
        assert p.returncode == 0, (who, p.err)
        c = _conf(d)
        assert c["ScryptObject"]["Salt"] != before["ScryptObject"]["Salt"]
        assert c["EncryptedKey"] != before["EncryptedKey"]
        assert cu.xray_key(os.path.join(d, "gocryptfs.conf"),
                           cu.PASSWORD) == cu.vector_key("gcm")


def test_passwd_extpass_failing_second_run(tmp_path):
    """An -extpass program that gives nothing the second time: the empty
    new password is refused and the config stays as it was. (The exit
    codes differ: gocryptfs 2.3 uses 9 for every empty password that is
    not typed on a terminal, veilfs 22, "empty password".)"""
    tmp = str(tmp_path)
    dirs = _copies(tmp, os.path.join(cu.vector_dir("gcm"), "cipher"))
    codes = {}
    for who, d in dirs.items():
        script, runs = _extpass(tmp, "ext-" + who, [cu.PASSWORD, ""])
        before = _conf(d)
        p = RUN[who]("-passwd", "-extpass", script, d, stdin=NO_INPUT)
        codes[who] = p.returncode
        assert runs() == 2
        assert _conf(d) == before
    assert codes["gocryptfs"] == 9, codes
    assert codes["veilfs"] == 9, codes


def test_passwd_masterkey_with_extpass(tmp_path):
    """-masterkey needs no old password; the new one comes from -extpass,
    and gocryptfs.conf.bak keeps the old config. gocryptfs 2.3 refuses
    -masterkey with -extpass (exit 1); veilfs accepts it, as it does at
    -init (a superset: what works with 2.3 works here)."""
    tmp = str(tmp_path)
    dirs = _copies(tmp, os.path.join(cu.vector_dir("gcm"), "cipher"))
    key = cu.vector_key("gcm")
    script, runs = _extpass(tmp, "ext-v", ["viakey"])
    d = dirs["veilfs"]
    p = veilfs("-passwd", "-masterkey", key, "-extpass", script, d,
               stdin=NO_INPUT)
    assert p.returncode == 0, p.err
    assert runs() == 1
    conf = os.path.join(d, "gocryptfs.conf")
    assert cu.xray_key(conf, "viakey") == key
    assert cu.xray_key(conf + ".bak", cu.PASSWORD) == key
    g = gocryptfs("-passwd", "-masterkey", key, "-extpass", script,
                  dirs["gocryptfs"], stdin=NO_INPUT)
    assert g.returncode == 1 and "cannot be used" in g.err
    # both take the new password from stdin without -extpass
    for who, d in dirs.items():
        if os.path.exists(os.path.join(d, "gocryptfs.conf.bak")):
            os.unlink(os.path.join(d, "gocryptfs.conf.bak"))
        p = RUN[who]("-passwd", "-masterkey", key, d, stdin="onstdin\n")
        assert p.returncode == 0, (who, p.err)
        assert cu.xray_key(os.path.join(d, "gocryptfs.conf"),
                           "onstdin") == key


# ---- legacy filesystems (no HKDF) ------------------------------------------

LEGACY_FLAGS = ["GCMIV128", "DirIV", "EMENames", "LongNames"]


def legacy_conf(path, password, masterkey, logn=10):
    """A gocryptfs <= 1.2 config (spec §1.6 legacy layout): KEK = scrypt
    output, AES-256-GCM with a 12-byte nonce over the master key, AAD
    BE64(0); no HKDF and no Raw64 flag."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    salt = os.urandom(32)
    kek = hashlib.scrypt(password.encode(), salt=salt, n=1 << logn, r=8,
                         p=1, dklen=32, maxmem=1 << 26)
    nonce = os.urandom(12)
    blob = nonce + AESGCM(kek).encrypt(nonce, masterkey, b"\0" * 8)
    c = {"Creator": "gocryptfs v1.1",
         "EncryptedKey": base64.b64encode(blob).decode(),
         "ScryptObject": {"Salt": base64.b64encode(salt).decode(),
                          "N": 1 << logn, "R": 8, "P": 1, "KeyLen": 32},
         "Version": 2, "FeatureFlags": LEGACY_FLAGS}
    with open(path, "w") as f:
        json.dump(c, f, indent="\t")
    os.chmod(path, 0o400)


def _blob_len(d):
    return len(base64.b64decode(_conf(d)["EncryptedKey"]))


@pytest.fixture
def legacy_dir(tmp_path, mounter, gocryptfs):
    """A legacy cipherdir (password "test") filled through gocryptfs;
    returns (cipherdir, master key hex, snapshot of its tree)."""
    pytest.importorskip("cryptography")
    d = str(tmp_path / "legacy")
    os.makedirs(d)
    key = os.urandom(32)
    legacy_conf(os.path.join(d, "gocryptfs.conf"), cu.PASSWORD, key)
    util.write_file(os.path.join(d, "gocryptfs.diriv"), os.urandom(16),
                    0o400)
    assert _blob_len(d) == 60
    m = mounter.mount(d, binary=gocryptfs)
    populate(m.mnt)
    want = util.snapshot(m.mnt)
    mounter.unmount(m)
    return d, key.hex(), want


def _mounts_with(mounter, gocryptfs, d, password, want):
    pf = util.write_passfile(os.path.join(mounter.tmp, "pw-" + password),
                             password)
    for binary in (util.VEILFS_BIN, gocryptfs):
        m = mounter.mount(d, binary=binary, args=["-passfile", pf])
        diff = util.diff_snapshots(util.snapshot(m.mnt), want)
        assert not diff, (binary, diff[:10])
        mounter.unmount(m)


@pytest.mark.parametrize("how", ["password", "masterkey"])
def test_passwd_legacy_no_hkdf(legacy_dir, tmp_path, mounter, gocryptfs,
                               how):
    """veilfs re-wraps a legacy config in the legacy layout (60-byte blob,
    flags and Creator unchanged), as gocryptfs 2.3 does; the new password
    then mounts it under veilfs and gocryptfs."""
    d, key, want = legacy_dir
    dirs = _copies(str(tmp_path), d)
    for who, c in dirs.items():
        if how == "password":
            p = RUN[who]("-passwd", c, stdin="test\nnewlegacy\n")
        else:
            p = RUN[who]("-passwd", "-masterkey", key, c,
                         stdin="newlegacy\n")
            assert os.path.exists(os.path.join(c, "gocryptfs.conf.bak"))
        assert p.returncode == 0, (who, p.out, p.err)
        after = _conf(c)
        assert after["FeatureFlags"] == LEGACY_FLAGS, who
        assert after["Creator"] == "gocryptfs v1.1", who
        assert _blob_len(c) == 60, who
        assert cu.xray_key(os.path.join(c, "gocryptfs.conf"),
                           "newlegacy") == key, who
        assert veilfs("-dumpmasterkey", c,
                      stdin="test\n").returncode == 12, who
    a, b = _conf(dirs["veilfs"]), _conf(dirs["gocryptfs"])
    assert sorted(a) == sorted(b)
    assert a["ScryptObject"]["N"] == b["ScryptObject"]["N"]
    _mounts_with(mounter, gocryptfs, dirs["veilfs"], "newlegacy", want)
