# SPDX-License-Identifier: MIT
"""The veilfs command line against the real gocryptfs 2.3 binaries:
-info and master-key unwrapping on every vector, -init output accepted by
gocryptfs and gocryptfs-xray, -passwd (and its failure paths), password
sources, option syntax, and every exit code of spec §6.5 that the CLI can
produce, cross-checked with gocryptfs where both fail the same way.

Every test uses -scryptn 10 (the vectors use N=1024 too) to stay fast.
"""

import json
import os
import signal
import stat
import subprocess
import time

import pytest

import cli_util as cu
import util
from cli_util import veilfs, gocryptfs

PW = cu.PASSWORD


def _require(ok, what):
    if ok:
        return
    if os.environ.get("CI") == "true":
        pytest.fail("%s is missing (CI=true: not skipping)" % what)
    pytest.skip("%s is missing" % what)


@pytest.fixture(autouse=True)
def _prereqs():
    _require(os.access(cu.VEILFS, os.X_OK),
             "binary under test %s (set BUILD_DIR)" % cu.VEILFS)
    _require(cu.GOCRYPTFS and cu.XRAY, "gocryptfs / gocryptfs-xray")
    _require(os.path.isdir(cu.vector_dir("gcm")),
             "test vectors (set VEILFS_VECTORS)")


@pytest.fixture
def pwfile(tmp_path):
    p = tmp_path / "pw"
    p.write_text(PW + "\n")
    return str(p)


@pytest.fixture
def gcmdir(tmp_path):
    """A writable copy of the gcm vector cipherdir (password "test")."""
    return cu.copy_vector_cipherdir("gcm", str(tmp_path / "gcm"))


def write_conf(cipherdir, text):
    path = os.path.join(cipherdir, "gocryptfs.conf")
    if os.path.exists(path):
        os.chmod(path, 0o600)
    with open(path, "w") as f:
        f.write(text)
    return path


def read(path):
    with open(path, "rb") as f:
        return f.read()


# ---- vectors ---------------------------------------------------------------

@pytest.mark.parametrize("name", cu.FORWARD_VECTORS)
def test_info_matches_gocryptfs(name):
    d = os.path.join(cu.vector_dir(name), "cipher")
    v = veilfs("-info", d)
    g = gocryptfs("-info", d)
    assert v.returncode == 0, v.err
    assert g.returncode == 0
    assert cu.info_lines(v.out) == cu.info_lines(g.out)
    assert v.out.splitlines()[0] == "Creator:           gocryptfs 2.3"


@pytest.mark.parametrize("name", cu.REVERSE_VECTORS)
def test_info_reverse_with_config(name):
    plain = os.path.join(cu.vector_dir(name), "plain")
    conf = os.path.join(plain, ".gocryptfs.reverse.conf")
    v = veilfs("-info", "-config", conf, plain)
    g = gocryptfs("-info", "-config", conf, plain)
    assert v.returncode == 0 and g.returncode == 0, v.err
    assert v.out == g.out
    assert "custom location" in v.out
    # -reverse finds the same file without -config
    v2 = veilfs("-info", "-reverse", plain)
    g2 = gocryptfs("-info", "-reverse", plain)
    assert v2.returncode == 0 and v2.out == g2.out


@pytest.mark.parametrize("name", cu.FORWARD_VECTORS)
def test_vector_masterkey(name):
    d = os.path.join(cu.vector_dir(name), "cipher")
    assert cu.veilfs_key(d, PW) == cu.vector_key(name)


@pytest.mark.parametrize("name", cu.REVERSE_VECTORS)
def test_vector_masterkey_reverse(name):
    plain = os.path.join(cu.vector_dir(name), "plain")
    conf = os.path.join(plain, ".gocryptfs.reverse.conf")
    assert cu.veilfs_key(plain, PW, "-config", conf) == cu.vector_key(name)
    assert cu.veilfs_key(plain, PW, "-reverse") == cu.vector_key(name)


def test_vector_wrong_password(gcmdir):
    before = read(os.path.join(gcmdir, "gocryptfs.conf"))
    p = veilfs("-dumpmasterkey", gcmdir, stdin="wrong\n")
    assert p.returncode == 12
    assert "Password incorrect." in p.err
    assert p.out == ""
    assert read(os.path.join(gcmdir, "gocryptfs.conf")) == before


# ---- -init -----------------------------------------------------------------

INIT_CASES = {
    "gcm": (["-gcm"], ["HKDF", "GCMIV128", "DirIV", "EMENames",
                       "LongNames", "Raw64"], "AES-GCM-256", True),
    "aessiv": (["-aessiv"], ["HKDF", "GCMIV128", "DirIV", "EMENames",
                             "LongNames", "Raw64", "AESSIV"],
               "AES-SIV-512", True),
    "xchacha": (["-xchacha"], ["HKDF", "XChaCha20Poly1305", "DirIV",
                               "EMENames", "LongNames", "Raw64"],
                "XChaCha20-Poly1305", True),
    "plaintextnames": (["-gcm", "-plaintextnames"],
                       ["HKDF", "GCMIV128", "PlaintextNames"],
                       "AES-GCM-256", False),
    "deterministic-names": (["-gcm", "-deterministic-names"],
                            ["HKDF", "GCMIV128", "EMENames", "LongNames",
                             "Raw64"], "AES-GCM-256", False),
    "longnamemax100": (["-gcm", "-longnamemax", "100"],
                       ["HKDF", "GCMIV128", "DirIV", "LongNameMax",
                        "EMENames", "LongNames", "Raw64"],
                       "AES-GCM-256", True),
}


@pytest.mark.parametrize("case", list(INIT_CASES))
def test_init_accepted_by_gocryptfs(tmp_path, case):
    flags, want_flags, cipher, diriv = INIT_CASES[case]
    d = str(tmp_path / "c")
    os.mkdir(d)
    # stdout on a terminal: the master key is displayed (spec §6.1)
    rc, out = cu.run_pty([cu.VEILFS, "-init", "-scryptn", "10"] + flags +
                         [d], PW + "\n")
    assert rc == 0, out
    shown = cu.parse_displayed_key(out)
    assert shown, out
    conf = os.path.join(d, "gocryptfs.conf")
    assert cu.xray_key(conf, PW) == shown
    assert cu.veilfs_key(d, PW) == shown
    g = gocryptfs("-info", d)
    assert g.returncode == 0, g.err
    assert ("FeatureFlags:      " + " ".join(want_flags)) in g.out
    assert "contentEncryption: " + cipher in g.out
    assert "N=1024 R=8 P=1 KeyLen=32" in g.out
    assert cu.info_lines(veilfs("-info", d).out) == cu.info_lines(g.out)
    st = os.stat(conf)
    assert stat.S_IMODE(st.st_mode) == 0o400
    j = json.loads(read(conf))
    assert list(j) == (["Creator", "EncryptedKey", "ScryptObject", "Version",
                        "FeatureFlags"] +
                       (["LongNameMax"] if case == "longnamemax100" else []))
    assert list(j["ScryptObject"]) == ["Salt", "N", "R", "P", "KeyLen"]
    assert j["FeatureFlags"] == want_flags
    # the same flags, in the same order, as gocryptfs 2.3 wrote them
    vec = json.loads(read(os.path.join(cu.vector_dir(case), "cipher",
                                       "gocryptfs.conf")))
    assert j["FeatureFlags"] == vec["FeatureFlags"]
    assert j.get("LongNameMax") == vec.get("LongNameMax")
    assert read(conf).startswith(b"{\n\t\"Creator\": \"veilfs ")
    assert read(conf).endswith(b"\n\t]\n}\n") or case == "longnamemax100"
    div = os.path.join(d, "gocryptfs.diriv")
    assert os.path.exists(div) == diriv
    if diriv:
        assert stat.S_IMODE(os.stat(div).st_mode) == 0o444
        assert os.path.getsize(div) == 16
    assert sorted(os.listdir(d)) == sorted(
        ["gocryptfs.conf"] + (["gocryptfs.diriv"] if diriv else []))


def test_init_reverse(tmp_path):
    d = tmp_path / "plain"
    d.mkdir()
    (d / "existing").write_text("plaintext stays")
    p = veilfs("-init", "-reverse", "-scryptn", "10", str(d), stdin=PW + "\n")
    assert p.returncode == 0, p.err
    conf = str(d / ".gocryptfs.reverse.conf")
    assert sorted(os.listdir(d)) == [".gocryptfs.reverse.conf", "existing"]
    assert stat.S_IMODE(os.stat(conf).st_mode) == 0o400
    g = gocryptfs("-info", "-reverse", str(d))
    assert g.returncode == 0, g.err
    assert "AESSIV" in g.out and "AES-SIV-512" in g.out
    vec = json.loads(read(os.path.join(cu.vector_dir("reverse"), "plain",
                                       ".gocryptfs.reverse.conf")))
    assert json.loads(read(conf))["FeatureFlags"] == vec["FeatureFlags"]
    assert cu.xray_key(conf, PW) == cu.veilfs_key(str(d), PW, "-reverse")
    # a second -init -reverse refuses to overwrite the config, as
    # gocryptfs does (exit code 7)
    p = veilfs("-init", "-reverse", "-scryptn", "10", str(d), stdin=PW + "\n")
    g = gocryptfs("-init", "-reverse", "-scryptn", "10", str(d),
                  stdin=PW + "\n")
    assert p.returncode == g.returncode == 7, (p.err, g.err)
    assert "already exists" in p.err


def test_init_not_a_terminal(tmp_path):
    d = str(tmp_path / "c")
    os.mkdir(d)
    p = veilfs("-init", "-xchacha", "-scryptn", "10", d, stdin=PW + "\n")
    assert p.returncode == 0, p.err
    assert ("Not running on a terminal, suppressing master key display"
            in p.out)
    assert "master key is" not in p.out
    assert len(cu.xray_key(os.path.join(d, "gocryptfs.conf"), PW)) == 64


def test_init_on_terminal_asks_twice_without_echo(tmp_path):
    d = str(tmp_path / "c")
    os.mkdir(d)
    rc, out = cu.run_tty([cu.VEILFS, "-init", "-gcm", "-scryptn", "10", d],
                         [("Password:", "s3cret"), ("Repeat:", "s3cret")])
    assert rc == 0, out
    assert "s3cret" not in out
    shown = cu.parse_displayed_key(out)
    assert shown and cu.xray_key(os.path.join(d, "gocryptfs.conf"),
                                 "s3cret") == shown
    # a mismatch is refused (exit 9) and writes nothing
    d2 = str(tmp_path / "c2")
    os.mkdir(d2)
    rc, out = cu.run_tty([cu.VEILFS, "-init", "-gcm", "-scryptn", "10", d2],
                         [("Password:", "one"), ("Repeat:", "two")])
    assert rc == 9, out
    assert "do not match" in out
    assert os.listdir(d2) == []


def test_passwd_on_terminal(gcmdir):
    rc, out = cu.run_tty([cu.VEILFS, "-passwd", gcmdir],
                         [("Old password:", PW), ("New password:", "nu"),
                          ("Repeat:", "nu")])
    assert rc == 0, out
    assert "Password changed." in out
    assert cu.xray_key(os.path.join(gcmdir, "gocryptfs.conf"), "nu") == \
        cu.vector_key("gcm")


def test_init_quiet(tmp_path):
    d = str(tmp_path / "c")
    os.mkdir(d)
    rc, out = cu.run_pty([cu.VEILFS, "-init", "-q", "-gcm", "-scryptn", "10",
                          d], PW + "\n")
    assert rc == 0
    assert cu.parse_displayed_key(out) is None
    assert "created successfully" not in out


def test_init_default_benchmarks_cipher(tmp_path):
    d = str(tmp_path / "c")
    os.mkdir(d)
    p = veilfs("-init", "-scryptn", "10", d, stdin=PW + "\n")
    assert p.returncode == 0, p.err
    line = [l for l in p.out.splitlines() if "MB/s" in l]
    assert len(line) == 1, p.out
    assert "AES-GCM-256" in line[0] and "XChaCha20-Poly1305" in line[0]
    chosen = line[0].rsplit("using ", 1)[1].strip()
    g = gocryptfs("-info", d)
    assert g.returncode == 0
    assert "contentEncryption: " + chosen in g.out


def test_init_default_scryptn_is_16(tmp_path):
    d = str(tmp_path / "c")
    os.mkdir(d)
    p = veilfs("-init", "-gcm", d, stdin=PW + "\n", timeout=120)
    assert p.returncode == 0, p.err
    j = json.loads(read(os.path.join(d, "gocryptfs.conf")))
    assert j["ScryptObject"]["N"] == 65536


def test_init_with_passfile_and_masterkey(tmp_path, pwfile):
    d = str(tmp_path / "c")
    os.mkdir(d)
    key = "00112233445566778899aabbccddeeff" * 2
    dashed = "-".join(key[i:i + 8] for i in range(0, 64, 8))
    p = veilfs("-init", "-gcm", "-scryptn", "10", "-passfile", pwfile,
               "-masterkey", dashed, d)
    assert p.returncode == 0, p.err
    assert cu.xray_key(os.path.join(d, "gocryptfs.conf"), PW) == key


@pytest.mark.parametrize("args,code", [
    (["-scryptn", "9"], 24),
    (["-scryptn", "29"], 24),
    (["-aessiv", "-xchacha"], 24),
    (["-longnamemax", "20"], 1),
    (["-longnamemax", "256"], 1),
])
def test_init_bad_flags(tmp_path, args, code):
    d = str(tmp_path / "c")
    os.mkdir(d)
    p = veilfs("-init", *args, d, stdin=PW + "\n")
    assert p.returncode == code, p.err
    assert os.listdir(d) == []
    assert len(p.err.strip().splitlines()) >= 1


def test_init_bad_flags_match_gocryptfs(tmp_path):
    for args in (["-scryptn", "9"], ["-aessiv", "-xchacha"],
                 ["-longnamemax", "20"]):
        a, b = str(tmp_path / "a"), str(tmp_path / "b")
        for x in (a, b):
            if os.path.exists(x):
                subprocess.run(["rm", "-rf", x], check=True)
            os.mkdir(x)
        v = veilfs("-init", *args, a, stdin=PW + "\n")
        g = gocryptfs("-init", *args, b, stdin=PW + "\n")
        assert v.returncode == g.returncode, (args, v.err, g.err)


def test_init_cipherdir_errors(tmp_path):
    p = veilfs("-init", "-scryptn", "10", str(tmp_path / "missing"),
               stdin=PW + "\n")
    assert p.returncode == 6
    d = tmp_path / "full"
    d.mkdir()
    (d / "x").write_text("x")
    p = veilfs("-init", "-scryptn", "10", str(d), stdin=PW + "\n")
    assert p.returncode == 6
    assert "not empty" in p.err
    g = gocryptfs("-init", "-scryptn", "10", str(d), stdin=PW + "\n")
    assert g.returncode == 6
    assert os.listdir(d) == ["x"]


def test_init_empty_password(tmp_path):
    d = str(tmp_path / "c")
    os.mkdir(d)
    p = veilfs("-init", "-gcm", "-scryptn", "10", d, stdin="\n")
    # gocryptfs 2.3 exits 9 (reading the password failed) for an empty
    # password from every source; its code 22 is never used there
    assert p.returncode == 9
    assert os.listdir(d) == []
    assert gocryptfs("-init", "-scryptn", "10", d,
                     stdin="\n").returncode == 9


def test_init_read_only_dir(tmp_path):
    d = str(tmp_path / "ro")
    os.mkdir(d)
    if subprocess.run(["mount", "--bind", d, d]).returncode != 0:
        pytest.skip("cannot bind-mount (not root?)")
    try:
        r = subprocess.run(["mount", "-o", "remount,ro,bind", d])
        assert r.returncode == 0
        p = veilfs("-init", "-gcm", "-scryptn", "10", d, stdin=PW + "\n")
        assert p.returncode == 24, p.err
        assert "Writing config file failed" in p.err
    finally:
        subprocess.run(["umount", d], check=True)
    assert os.listdir(d) == []


def test_init_diriv_failure_exit_7(tmp_path):
    """Config written elsewhere (-config), root diriv impossible: exit 7."""
    d = str(tmp_path / "ro")
    os.mkdir(d)
    conf = str(tmp_path / "elsewhere.conf")
    if subprocess.run(["mount", "--bind", d, d]).returncode != 0:
        pytest.skip("cannot bind-mount (not root?)")
    try:
        assert subprocess.run(["mount", "-o", "remount,ro,bind",
                               d]).returncode == 0
        p = veilfs("-init", "-gcm", "-scryptn", "10", "-config", conf, d,
                   stdin=PW + "\n")
        assert p.returncode == 7, p.err
        assert "gocryptfs.diriv" in p.err
    finally:
        subprocess.run(["umount", d], check=True)
    assert os.path.exists(conf)


# ---- -passwd ---------------------------------------------------------------

def test_passwd(gcmdir):
    conf = os.path.join(gcmdir, "gocryptfs.conf")
    before = json.loads(read(conf))
    p = veilfs("-passwd", "-scryptn", "11", gcmdir, stdin="test\nnewpw\n")
    assert p.returncode == 0, p.err
    assert "Password changed." in p.out
    after = json.loads(read(conf))
    assert stat.S_IMODE(os.stat(conf).st_mode) == 0o400
    assert not os.path.exists(conf + ".tmp")
    # same Creator and flags, new salt, N from -scryptn
    assert after["Creator"] == "gocryptfs 2.3"
    assert after["FeatureFlags"] == before["FeatureFlags"]
    assert after["ScryptObject"]["Salt"] != before["ScryptObject"]["Salt"]
    assert after["ScryptObject"]["N"] == 2048
    assert after["EncryptedKey"] != before["EncryptedKey"]
    # old password: exit 12; new one: same key in veilfs and gocryptfs
    old = veilfs("-dumpmasterkey", gcmdir, stdin="test\n")
    assert old.returncode == 12
    assert cu.veilfs_key(gcmdir, "newpw") == cu.vector_key("gcm")
    assert cu.xray_key(conf, "newpw") == cu.vector_key("gcm")
    g = gocryptfs("-passwd", gcmdir, stdin="test\nx\n")
    assert g.returncode == 12
    # without -scryptn the cost is kept
    p = veilfs("-passwd", gcmdir, stdin="newpw\nthird\n")
    assert p.returncode == 0, p.err
    assert json.loads(read(conf))["ScryptObject"]["N"] == 2048
    assert cu.xray_key(conf, "third") == cu.vector_key("gcm")


def test_passwd_longnamemax_kept(tmp_path):
    d = cu.copy_vector_cipherdir("longnamemax100", str(tmp_path / "c"))
    conf = os.path.join(d, "gocryptfs.conf")
    before = json.loads(read(conf))
    p = veilfs("-passwd", d, stdin="test\nnewpw\n")
    assert p.returncode == 0, p.err
    after = json.loads(read(conf))
    assert after["LongNameMax"] == 100
    assert after["FeatureFlags"] == before["FeatureFlags"]
    assert list(after) == list(before)
    assert cu.xray_key(conf, "newpw") == cu.vector_key("longnamemax100")


def test_passwd_wrong_old_password(gcmdir):
    conf = os.path.join(gcmdir, "gocryptfs.conf")
    before = read(conf)
    p = veilfs("-passwd", gcmdir, stdin="wrong\nnewpw\n")
    assert p.returncode == 12
    assert "Password incorrect." in p.err
    assert read(conf) == before


def test_passwd_stale_tmp_keeps_old_config(gcmdir):
    conf = os.path.join(gcmdir, "gocryptfs.conf")
    before = read(conf)
    with open(conf + ".tmp", "w") as f:
        f.write("stale")
    p = veilfs("-passwd", gcmdir, stdin="test\nnewpw\n")
    assert p.returncode == 24
    assert ".tmp" in p.err
    assert read(conf) == before
    assert read(conf + ".tmp") == b"stale"
    assert cu.veilfs_key(gcmdir, PW) == cu.vector_key("gcm")


def test_passwd_read_only_keeps_old_config(gcmdir):
    conf = os.path.join(gcmdir, "gocryptfs.conf")
    before = read(conf)
    if subprocess.run(["mount", "--bind", gcmdir, gcmdir]).returncode != 0:
        pytest.skip("cannot bind-mount (not root?)")
    try:
        assert subprocess.run(["mount", "-o", "remount,ro,bind",
                               gcmdir]).returncode == 0
        p = veilfs("-passwd", gcmdir, stdin="test\nnewpw\n")
        assert p.returncode == 24, p.err
    finally:
        subprocess.run(["umount", gcmdir], check=True)
    assert read(conf) == before
    assert not os.path.exists(conf + ".tmp")


def test_passwd_masterkey(gcmdir):
    conf = os.path.join(gcmdir, "gocryptfs.conf")
    before = read(conf)
    key = cu.vector_key("gcm")
    p = veilfs("-passwd", "-masterkey", key, gcmdir, stdin="fresh\n")
    assert p.returncode == 0, p.err
    bak = conf + ".bak"
    assert read(bak) == before
    assert cu.xray_key(conf, "fresh") == key
    assert cu.xray_key(bak, PW) == key
    # a second reset refuses to clobber the backup; nothing changes; exit
    # 7 as gocryptfs (it was 24)
    now = read(conf)
    p = veilfs("-passwd", "-masterkey", key, gcmdir, stdin="other\n")
    assert p.returncode == 7
    assert read(conf) == now and read(bak) == before
    if cu.GOCRYPTFS:
        g = gocryptfs("-passwd", "-masterkey", key, gcmdir,
                      stdin="other\nother\n")
        assert g.returncode == 7, g.err
        assert read(conf) == now and read(bak) == before


def test_passwd_masterkey_stdin(gcmdir):
    key = cu.vector_key("gcm")
    p = veilfs("-passwd", "-masterkey", "stdin", gcmdir,
               stdin=key + "\nfresh\n")
    assert p.returncode == 0, p.err
    assert cu.veilfs_key(gcmdir, "fresh") == key


def test_passwd_bad_scryptn(gcmdir):
    p = veilfs("-passwd", "-scryptn", "5", gcmdir, stdin="test\nnew\n")
    assert p.returncode == 13


# ---- password sources --------------------------------------------------------

def test_passfile_concatenated(tmp_path):
    d = os.path.join(cu.vector_dir("gcm"), "cipher")
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("te\nignored")
    b.write_text("st\n")
    p = veilfs("-dumpmasterkey", "-passfile", str(a), "-passfile", str(b), d)
    assert p.returncode == 0, p.err
    assert p.out.strip() == cu.vector_key("gcm")


def test_passfile_cr_not_stripped(tmp_path):
    d = os.path.join(cu.vector_dir("gcm"), "cipher")
    f = tmp_path / "pw"
    f.write_bytes(b"test\r\n")
    p = veilfs("-dumpmasterkey", "-passfile", str(f), d)
    assert p.returncode == 12


def test_passfile_errors(tmp_path):
    d = os.path.join(cu.vector_dir("gcm"), "cipher")
    p = veilfs("-dumpmasterkey", "-passfile", str(tmp_path / "nope"), d)
    assert p.returncode == 9
    assert "nope" in p.err
    e = tmp_path / "empty"
    e.write_text("\nsecond line")
    p = veilfs("-dumpmasterkey", "-passfile", str(e), d)
    assert p.returncode == 9
    big = tmp_path / "big"
    big.write_text("x" * 2049 + "\n")
    p = veilfs("-dumpmasterkey", "-passfile", str(big), d)
    assert p.returncode == 9


def test_stdin_password(tmp_path):
    d = os.path.join(cu.vector_dir("gcm"), "cipher")
    p = veilfs("-dumpmasterkey", d, stdin="test")  # no newline
    assert p.returncode == 0 and p.out.strip() == cu.vector_key("gcm")
    p = veilfs("-dumpmasterkey", d, stdin="")
    assert p.returncode == 9


def test_extpass(tmp_path):
    d = os.path.join(cu.vector_dir("gcm"), "cipher")
    # one -extpass is split on spaces
    p = veilfs("-dumpmasterkey", "-extpass", "echo test", d)
    assert p.returncode == 0, p.err
    assert p.out.strip() == cu.vector_key("gcm")
    # repeated ones are used as they are: "printf" "%s\n" "test"
    p = veilfs("-dumpmasterkey", "-extpass", "printf", "-extpass", "%s\\n",
               "-extpass", "test", d)
    assert p.returncode == 0, p.err
    # no shell is involved
    p = veilfs("-dumpmasterkey", "-extpass", "echo test; exit 1", d)
    assert p.returncode == 12
    # only the first line counts
    script = tmp_path / "pw.sh"
    script.write_text("#!/bin/sh\necho test\necho more\n")
    script.chmod(0o755)
    p = veilfs("-dumpmasterkey", "-extpass", str(script), d)
    assert p.returncode == 0, p.err
    p = veilfs("-dumpmasterkey", "-extpass", "false", d)
    assert p.returncode == 9
    p = veilfs("-dumpmasterkey", "-extpass", "true", d)
    assert p.returncode == 9
    p = veilfs("-dumpmasterkey", "-extpass", str(tmp_path / "nope"), d)
    assert p.returncode == 9


def _ignore_sigchld():
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)


def test_extpass_status_counts_when_the_parent_ignores_sigchld(tmp_path):
    """An ignored SIGCHLD survives exec, and with it the kernel reaps
    children by itself, so that waitpid finds none: the exit status of the
    extpass program must count all the same. One that prints the password
    and exits 1 is refused (9, as without the inherited setting and as
    gocryptfs does); one that exits 0 is taken."""
    d = os.path.join(cu.vector_dir("gcm"), "cipher")
    script = tmp_path / "pw.sh"
    for code, want in ((1, 9), (0, 0)):
        script.write_text("#!/bin/sh\necho test\nexit %d\n" % code)
        script.chmod(0o755)
        for ign in (None, _ignore_sigchld):
            p = subprocess.run([cu.VEILFS, "-dumpmasterkey", "-extpass",
                                str(script), d], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=60,
                               preexec_fn=ign)
            err = p.stderr.decode(errors="replace")
            assert p.returncode == want, (code, ign, err)
            if want:
                assert "extpass program returned an error" in err
            else:
                assert p.stdout.decode().strip() == cu.vector_key("gcm")


# ---- password and config sources that never end (issue 12) -------------------

# How long veilfs waits for a pipe or FIFO, or for an extpass program to end
# after its first line (src/config/password.c WAIT_S), plus slack.
WAIT_S = 10
BOUND = WAIT_S + 20


def timed(*args):
    t = time.monotonic()
    p = veilfs(*args, timeout=BOUND + 30)
    p.secs = time.monotonic() - t
    return p


def test_extpass_that_never_stops(tmp_path):
    """`yes` and `cat /dev/zero` print forever: gocryptfs stops reading
    (exit 9, "extpass program returned an error" and "maximum password
    length exceeded"); so do we, at once."""
    d = os.path.join(cu.vector_dir("gcm"), "cipher")
    os.mkdir(tmp_path / "mnt")
    for cmd in ("yes", "cat /dev/zero"):
        p = timed("-dumpmasterkey", "-extpass", cmd, d)
        assert p.returncode == 9, (cmd, p.err)
        assert p.secs < BOUND, (cmd, p.secs)
        if cu.GOCRYPTFS:
            g = cu.run([cu.GOCRYPTFS, "-extpass", cmd, d,
                        str(tmp_path / "mnt")], timeout=60)
            assert g.returncode == p.returncode, (cmd, g.stderr)
    p = timed("-dumpmasterkey", "-extpass", "cat /dev/zero", d)
    assert "max password length" in p.err


def test_extpass_that_never_exits(tmp_path):
    """A first line, then it lives on (gocryptfs waits forever): killed
    after WAIT_S seconds, exit 9."""
    d = os.path.join(cu.vector_dir("gcm"), "cipher")
    script = tmp_path / "pw.sh"
    script.write_text("#!/bin/sh\necho test\nexec sleep 1000\n")
    script.chmod(0o755)
    p = timed("-dumpmasterkey", "-extpass", str(script), d)
    assert p.returncode == 9, p.err
    assert WAIT_S - 1 <= p.secs < BOUND, p.secs
    assert "did not end" in p.err


def test_extpass_that_leaves_a_child_behind(tmp_path):
    """A program that prints the password and exits but leaves a child in
    the background holding its stdout (a helper daemon, `cmd &`): the
    password is taken once the program itself has ended, as gocryptfs
    does, without waiting for the child; with and without a newline."""
    d = os.path.join(cu.vector_dir("gcm"), "cipher")
    os.mkdir(tmp_path / "mnt")
    pids = tmp_path / "pids"
    script = tmp_path / "pw.sh"
    try:
        for out in ("echo test", "printf test"):
            script.write_text("#!/bin/sh\n%s\nsleep 1000 2>/dev/null &\necho $! >> %s\n"
                              % (out, pids))
            script.chmod(0o755)
            p = timed("-dumpmasterkey", "-extpass", str(script), d)
            assert p.returncode == 0, (out, p.err)
            assert p.out.strip() == cu.vector_key("gcm")
            if cu.GOCRYPTFS and out == "echo test":
                mnt = str(tmp_path / "mnt")
                try:
                    g = gocryptfs("-ro", "-extpass", str(script), d, mnt)
                    assert g.returncode == 0, g.err
                finally:
                    cu.unmount(mnt)
    finally:
        if pids.exists():
            for pid in pids.read_text().split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass


def test_passfile_fifo(tmp_path):
    """A FIFO nobody writes (gocryptfs waits forever): exit 9 after WAIT_S
    seconds. One that delivers (as <(echo test) would) works."""
    d = os.path.join(cu.vector_dir("gcm"), "cipher")
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    p = timed("-dumpmasterkey", "-passfile", fifo, d)
    assert p.returncode == 9, p.err
    assert WAIT_S - 1 <= p.secs < BOUND, p.secs
    w = subprocess.Popen(["sh", "-c", "echo test > " + fifo])
    try:
        p = timed("-dumpmasterkey", "-passfile", fifo, d)
    finally:
        w.wait(timeout=BOUND)
    assert p.returncode == 0, p.err
    assert p.out.strip() == cu.vector_key("gcm")


def test_config_fifo(tmp_path, gcmdir):
    """gocryptfs.conf (or -config) that is a FIFO: refused at once."""
    fifo = str(tmp_path / "conf.fifo")
    os.mkfifo(fifo)
    p = timed("-dumpmasterkey", "-config", fifo, "-passfile",
              os.path.join(cu.vector_dir("gcm"), "password.txt"), gcmdir)
    assert p.returncode == 11, p.err
    assert "not a regular file" in p.err and p.secs < BOUND
    conf = os.path.join(gcmdir, "gocryptfs.conf")
    os.unlink(conf)
    os.mkfifo(conf)
    p = timed("-info", gcmdir)
    assert p.returncode == 8, p.err
    assert "not a regular file" in p.err and p.secs < BOUND


def test_config_device_never_opened(tmp_path, gcmdir):
    """gocryptfs.conf that is a device node, or a symlink to one outside
    the cipherdir (1:3, /dev/null's numbers, made here so that nobody
    else opens it): refused as not a regular file without being opened
    (a driver's open can act)."""
    node = str(tmp_path / "null")
    os.mknod(node, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    conf = os.path.join(gcmdir, "gocryptfs.conf")
    os.unlink(conf)
    os.symlink(node, conf)
    ifd = util.open_watch(node)
    try:
        p = timed("-info", gcmdir)
        assert p.returncode == 8, p.err
        assert "not a regular file" in p.err
        p = timed("-dumpmasterkey", "-config", node, "-passfile",
                  os.path.join(cu.vector_dir("gcm"), "password.txt"),
                  gcmdir)
        assert p.returncode == 11, p.err
        assert "not a regular file" in p.err
        assert not util.was_opened(ifd), "the device node was opened"
    finally:
        os.close(ifd)


def test_scrypt_cost_for_hours_refused(gcmdir):
    """P = 2^20 at N = 2^16 would run for days (gocryptfs hangs): refused
    at once, like a huge N (gocryptfs: out of memory, exit 2)."""
    conf = os.path.join(gcmdir, "gocryptfs.conf")
    with open(conf) as f:
        c = json.load(f)
    pw = os.path.join(cu.vector_dir("gcm"), "password.txt")
    codes = []
    # R and P past 32 bits are not cut: R = 2^32 + 8 is no cheap R = 8
    for n, r, p_ in ((1 << 16, 8, 1 << 20), (1 << 40, 8, 1),
                     (1 << 10, (1 << 32) + 8, 1), (1 << 10, 8, (1 << 32) + 1)):
        c["ScryptObject"]["N"], c["ScryptObject"]["P"] = n, p_
        c["ScryptObject"]["R"] = r
        write_conf(gcmdir, json.dumps(c))
        p = timed("-dumpmasterkey", "-passfile", pw, gcmdir)
        assert p.secs < BOUND and "too high" in p.err, p.err
        codes.append(p.returncode)
    assert codes == [11, 11, 11, 11], codes


# ---- option syntax -----------------------------------------------------------

def test_option_syntax(pwfile):
    d = os.path.join(cu.vector_dir("gcm"), "cipher")
    key = cu.vector_key("gcm")
    for argv in (["-dumpmasterkey", "-passfile", pwfile, d],
                 ["--dumpmasterkey", "--passfile=" + pwfile, d],
                 ["-dumpmasterkey=true", "-passfile=" + pwfile, d],
                 [d, "-dumpmasterkey", "-passfile", pwfile],
                 ["-dumpmasterkey", d, "-o", "passfile=" + pwfile + ",ro"],
                 ["-o", "dumpmasterkey,passfile=" + pwfile, "--", d]):
        p = veilfs(*argv)
        assert p.returncode == 0, (argv, p.err)
        assert p.out.strip() == key


def test_usage_errors():
    for argv in (["-nosuchflag"], ["--nosuchflag=1"], ["-init"],
                 ["-info"], ["-scryptn"], ["-info=maybe", "x"],
                 ["a", "b", "c"], [], ["-info", "-init", "x"],
                 ["-longnamemax", "abc", "a", "b"]):
        p = veilfs(*argv)
        assert p.returncode == 1, (argv, p.err)
        assert p.err.strip(), argv
    p = veilfs("-nosuchflag")
    assert "nosuchflag" in p.err and "usage:" in p.err
    g = gocryptfs("-nosuchflag")
    assert g.returncode == 1


def test_help_and_version():
    p = veilfs("-h")
    assert p.returncode == 0 and "usage:" in p.out
    p = veilfs("--help")
    assert p.returncode == 0
    p = veilfs("-version")
    assert p.returncode == 0 and p.out.startswith("veilfs ")


def test_speed():
    p = veilfs("-speed", timeout=300)
    assert p.returncode == 0, p.err
    assert p.out.startswith("veilfs "), p.out  # the version first
    for name in ("AES-GCM-256", "AES-SIV-512", "XChaCha20-Poly1305"):
        assert name in p.out
    # One column for the figures, the long "parallel (N threads)" rows too.
    rows = [line for line in p.out.splitlines()
            if line.endswith(" MB/s") or " MB/s  (" in line
            or " n/a (needs " in line]
    assert any("parallel" in r for r in rows), p.out
    ends = {r.index(" MB/s") if " MB/s" in r else r.index(" n/a") + 4
            for r in rows}
    assert len(ends) == 1, "figures not aligned:\n" + p.out


def test_speed_wins_over_other_actions(tmp_path):
    """-speed with another action benchmarks and does nothing else, as in
    gocryptfs (a usage error before): no cipherdir is made."""
    d = tmp_path / "d"
    d.mkdir()
    for argv in (["-speed", "-init", str(d)], ["-passwd", "-speed", str(d)]):
        p = veilfs(*argv, timeout=300)
        assert p.returncode == 0, p.err
        assert "AES-GCM-256" in p.out
        assert os.listdir(str(d)) == []


# ---- -info and config-loading errors ----------------------------------------

def test_info_errors(tmp_path):
    p = veilfs("-info", str(tmp_path / "missing"))
    assert p.returncode == 6
    assert gocryptfs("-info", str(tmp_path / "missing")).returncode == 6
    p = veilfs("-info", str(tmp_path))
    assert p.returncode == 8
    assert p.err.startswith("Loading config file failed: ")
    assert gocryptfs("-info", str(tmp_path)).returncode == 8


def _gcm_text():
    return read(os.path.join(cu.vector_dir("gcm"), "cipher",
                             "gocryptfs.conf")).decode()


CORRUPT = {
    # name: (config text, -info reason substring)
    "empty": ("", "empty"),
    "nonjson": ("nojson\n", "JSON"),
    "truncated": (None, "JSON"),
    "array": ("[1, 2]\n", "config object"),
    "wrongtype-version": (None, "Version"),
    "wrongtype-flags": (None, "FeatureFlags"),
    "badbase64": (None, "EncryptedKey"),
    "unknownflag": (None, "Unknown feature flag \"Foo\""),
    "version3": (None, "Version"),
    "bothaead": (None, "AESSIV"),
    "nogcmiv128": (None, "GCMIV128"),
    "scryptn-too-small": (None, "ScryptObject.N"),
    "salt-short": (None, "ScryptObject.Salt"),
    "plaintext-conflict": (None, "PlaintextNames"),
    "longnamemax-noflag": (None, "LongNameMax"),
}


def corrupt_text(name):
    text, _ = CORRUPT[name]
    if text is not None:
        return text
    t = _gcm_text()
    if name == "truncated":
        return t[:200]
    sub = {
        "wrongtype-version": ('"Version": 2', '"Version": "2"'),
        "wrongtype-flags": ('"FeatureFlags": [',
                            '"FeatureFlags": 5, "X": ['),
        "badbase64": ('"EncryptedKey": "', '"EncryptedKey": "!'),
        "unknownflag": ('"Raw64"', '"Raw64", "Foo"'),
        "version3": ('"Version": 2', '"Version": 3'),
        "bothaead": ('"Raw64"', '"Raw64", "AESSIV", "XChaCha20Poly1305"'),
        "nogcmiv128": ('"GCMIV128",', ''),
        "scryptn-too-small": ('"N": 1024', '"N": 512'),
        "salt-short": ('"Salt": "/DIk', '"Salt": "', ),
        "plaintext-conflict": ('"Raw64"', '"Raw64", "PlaintextNames"'),
        "longnamemax-noflag": ('"Version": 2',
                               '"Version": 2, "LongNameMax": 100'),
    }[name]
    assert sub[0] in t
    out = t.replace(sub[0], sub[1], 1)
    if name == "salt-short":
        # keep valid base64 but only 30 bytes
        j = json.loads(t)
        j["ScryptObject"]["Salt"] = "A" * 40
        out = json.dumps(j)
    return out


@pytest.mark.parametrize("name", list(CORRUPT))
def test_corrupt_config_info(tmp_path, name):
    d = str(tmp_path / "c")
    os.mkdir(d)
    write_conf(d, corrupt_text(name))
    v = veilfs("-info", d)
    g = gocryptfs("-info", d)
    assert v.returncode == 8, v.err
    assert g.returncode == 8
    lines = v.err.strip().splitlines()
    assert len(lines) == 1, v.err
    assert lines[0].startswith("Loading config file failed: ")
    assert CORRUPT[name][1] in lines[0], lines[0]
    assert v.out == ""


@pytest.mark.parametrize("name", list(CORRUPT))
def test_corrupt_config_unlock_exit_code_matches_gocryptfs(tmp_path, name):
    """Mounting (and -passwd) a corrupt config fails like gocryptfs: 27 for
    a config that parses but fails validation, 11 otherwise."""
    d = str(tmp_path / "c")
    mnt = str(tmp_path / "mnt")
    os.mkdir(d)
    os.mkdir(mnt)
    conf = write_conf(d, corrupt_text(name))
    before = read(conf)
    try:
        g = gocryptfs("-fg", d, mnt, stdin=PW + "\n", timeout=30)
        v = veilfs("-fg", d, mnt, stdin=PW + "\n", timeout=30)
    finally:
        cu.unmount(mnt)
    assert v.returncode == g.returncode, (v.err, g.err)
    assert v.returncode in (11, 27)
    p = veilfs("-passwd", d, stdin="test\nnew\n")
    assert p.returncode == v.returncode
    assert read(conf) == before


@pytest.mark.parametrize("sub,word", [
    (('"N": 1024', '"N": 1025'), "power of two"),
    (('"KeyLen": 32', '"KeyLen": 64'), "KeyLen"),
])
def test_unlock_time_checks_fail_cleanly(tmp_path, sub, word):
    """gocryptfs -info accepts these and gocryptfs panics when unlocking;
    veilfs shows -info the same way and refuses cleanly with exit 27."""
    d = str(tmp_path / "c")
    os.mkdir(d)
    write_conf(d, _gcm_text().replace(sub[0], sub[1], 1))
    v = veilfs("-info", d)
    g = gocryptfs("-info", d)
    assert v.returncode == 0 == g.returncode
    assert cu.info_lines(v.out) == cu.info_lines(g.out)
    p = veilfs("-dumpmasterkey", d, stdin=PW + "\n")
    assert p.returncode == 27
    assert word in p.err
    assert "panic" not in p.err


def test_go_tolerant_reading(tmp_path):
    """Lower-case keys and unknown fields are accepted, as by gocryptfs."""
    d = str(tmp_path / "c")
    os.mkdir(d)
    t = _gcm_text().replace('"FeatureFlags"', '"featureflags"').replace(
        '"Creator"', '"Unknown": [1, {"a": null}], "Creator"')
    write_conf(d, t)
    assert cu.veilfs_key(d, PW) == cu.vector_key("gcm")
    v = veilfs("-info", d)
    g = gocryptfs("-info", d)
    assert v.returncode == 0 and v.out == g.out


def test_fido2_refused(tmp_path):
    d = str(tmp_path / "c")
    os.mkdir(d)
    j = json.loads(_gcm_text())
    j["FeatureFlags"].append("FIDO2")
    j["FIDO2"] = {"CredentialID": "AAAA", "HMACSalt": "AAAA"}
    write_conf(d, json.dumps(j))
    assert veilfs("-info", d).returncode == 0
    # without -fido2: gocryptfs's exit code 1 ("need to use the --fido2
    # option"), one line
    for args in (["-dumpmasterkey", d], ["-passwd", d]):
        p = veilfs(*args, stdin=PW + "\nnew\n")
        assert p.returncode == 1, (args, p.stderr)
        assert p.stderr.count(b"\n") == 1 and b"-fido2" in p.stderr, \
            p.stderr
    g = gocryptfs("-passwd", d, stdin=PW + "\nnew\n")
    assert g.returncode == 1


# ---- mount: the CLI side -------------------------------------------------------

def test_mount_argument_errors(tmp_path, gcmdir):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    p = veilfs(str(tmp_path / "nocipher"), str(mnt), stdin=PW + "\n")
    assert p.returncode == 6
    assert gocryptfs(str(tmp_path / "nocipher"), str(mnt),
                     stdin=PW + "\n").returncode == 6
    p = veilfs(gcmdir, str(tmp_path / "nomnt"), stdin=PW + "\n")
    assert p.returncode == 10
    assert gocryptfs(gcmdir, str(tmp_path / "nomnt"),
                     stdin=PW + "\n").returncode == 10
    f = tmp_path / "file"
    f.write_text("x")
    p = veilfs(gcmdir, str(f), stdin=PW + "\n")
    assert p.returncode == 10
    (mnt / "x").write_text("x")
    p = veilfs(gcmdir, str(mnt), stdin=PW + "\n")
    assert p.returncode == 10
    p = veilfs(gcmdir, str(tmp_path / "nomnt"), stdin=PW + "\n")
    assert p.returncode == 10
    p = veilfs(gcmdir, stdin=PW + "\n")
    assert p.returncode == 1


def test_mount_wrong_password_and_sources(tmp_path, gcmdir, pwfile):
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    try:
        p = veilfs("-fg", gcmdir, mnt, stdin="wrong\n", timeout=30)
        assert p.returncode == 12
        assert "Password incorrect." in p.err
        p = veilfs("-fg", "-passfile", str(tmp_path / "nope"), gcmdir, mnt,
                   timeout=30)
        assert p.returncode == 9
        p = veilfs("-fg", gcmdir, mnt, stdin="\n", timeout=30)
        assert p.returncode == 9
        p = veilfs("-fg", "-masterkey", "abc", gcmdir, mnt, timeout=30)
        assert p.returncode == 14
        p = veilfs("-fg", "-cipher-impl", "no-such-impl", "-passfile",
                   pwfile, gcmdir, mnt, timeout=30)
        assert p.returncode == 1
        assert "no-such-impl" in p.err
    finally:
        cu.unmount(mnt)
    assert not cu.is_mounted(mnt)


def _require_fuse():
    _require(os.path.exists("/dev/fuse") and cu.FUSERMOUNT,
             "/dev/fuse and fusermount3")


def _check_plain(mnt, name):
    """Every regular file of the vector's plain/ tree reads back equal."""
    plain = os.path.join(cu.vector_dir(name), "plain")
    n = 0
    for root, dirs, files in os.walk(plain):
        for fn in files:
            src = os.path.join(root, fn)
            if os.path.islink(src):
                continue
            rel = os.path.relpath(src, plain)
            assert read(os.path.join(mnt, rel)) == read(src), rel
            n += 1
    assert n > 0


@pytest.mark.parametrize("name", ["gcm", "aessiv", "xchacha"])
def test_mount_vector_daemon(tmp_path, name, pwfile):
    """veilfs CIPHERDIR MOUNTPOINT: daemonizes, returns 0 once mounted."""
    _require_fuse()
    d = cu.copy_vector_cipherdir(name, str(tmp_path / "c"))
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    try:
        # With -nosyslog the daemon keeps stderr: give it a file, not a
        # pipe, or waiting for EOF would wait for the unmount.
        with open(str(tmp_path / "log"), "w") as log:
            rc = subprocess.run([cu.VEILFS, "-passfile", pwfile, "-nosyslog",
                                 "-ro", d, mnt], stdout=log, stderr=log,
                                timeout=60).returncode
        assert rc == 0, (tmp_path / "log").read_text()
        assert cu.is_mounted(mnt)
        _check_plain(mnt, name)
        with pytest.raises(OSError):
            open(os.path.join(mnt, "new"), "w").close()
    finally:
        cu.unmount(mnt)
    assert not cu.is_mounted(mnt)


MASTERKEY_MOUNT_FLAGS = {
    "gcm": [],
    "aessiv": ["-aessiv"],
    "xchacha": ["-xchacha"],
    "plaintextnames": ["-plaintextnames"],
    "deterministic-names": ["-deterministic-names"],
    "longnamemax100": ["-longnamemax", "100"],
}


@pytest.mark.parametrize("name", list(MASTERKEY_MOUNT_FLAGS))
def test_mount_masterkey_flags(tmp_path, name):
    """-masterkey mounts ignore the config: flags give the format."""
    _require_fuse()
    d = cu.copy_vector_cipherdir(name, str(tmp_path / "c"))
    os.chmod(os.path.join(d, "gocryptfs.conf"), 0o600)
    os.unlink(os.path.join(d, "gocryptfs.conf"))
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    try:
        p = veilfs("-masterkey", cu.vector_key(name), "-q", "-ro",
                   *MASTERKEY_MOUNT_FLAGS[name], d, mnt, timeout=60)
        assert p.returncode == 0, p.err
        _check_plain(mnt, name)
        # every name of plain/ is listed (long, UTF-8 and short names)
        plain = os.path.join(cu.vector_dir(name), "plain")
        assert sorted(os.listdir(mnt)) == sorted(os.listdir(plain))
    finally:
        cu.unmount(mnt)


def test_mount_foreground_and_impl(tmp_path, pwfile):
    """-fg serves until unmounted and then exits 0; -cipher-impl with each
    implementation of the cipher named by -speed works."""
    _require_fuse()
    d = cu.copy_vector_cipherdir("gcm", str(tmp_path / "c"))
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    p = subprocess.Popen([cu.VEILFS, "-fg", "-passfile", pwfile, d, mnt],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for _ in range(200):
            if cu.is_mounted(mnt) or p.poll() is not None:
                break
            time.sleep(0.05)
        assert cu.is_mounted(mnt), p.stderr.read() if p.poll() else ""
        _check_plain(mnt, "gcm")
    finally:
        cu.unmount(mnt)
    assert p.wait(timeout=30) == 0
    err = p.stderr.read().decode()
    assert "AES-GCM-256" in err
    # every implementation of the cipher can be forced, case-insensitively
    for impl in ("AES-GCM-256-OpenSSL", "aes-gcm-256-libgcrypt"):
        p = subprocess.Popen([cu.VEILFS, "-fg", "-passfile", pwfile,
                              "-cipher-impl", impl, d, mnt],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            for _ in range(200):
                if cu.is_mounted(mnt) or p.poll() is not None:
                    break
                time.sleep(0.05)
            assert cu.is_mounted(mnt), p.stderr.read() if p.poll() else ""
            _check_plain(mnt, "gcm")
        finally:
            cu.unmount(mnt)
        assert p.wait(timeout=30) == 0
        err = p.stderr.read().decode().lower()
        assert impl.lower() + " (forced)" in err, err


@pytest.mark.parametrize("how", ["flag", "o"])
def test_masterkey_not_left_in_cmdline(tmp_path, how):
    """After parsing, the -masterkey value (or -o masterkey=) is wiped from
    argv, so ps and /proc/PID/cmdline stop showing it."""
    _require_fuse()
    d = cu.copy_vector_cipherdir("gcm", str(tmp_path / "c"))
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    key = cu.vector_key("gcm")
    arg = ["-masterkey=" + key] if how == "flag" else \
        ["-o", "ro,masterkey=" + key + ",fsname=vf"]
    p = subprocess.Popen([cu.VEILFS, "-fg", "-q", *arg, d,
                          mnt], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if cu.is_mounted(mnt) or p.poll() is not None:
                break
            time.sleep(0.05)
        assert cu.is_mounted(mnt)
        with open("/proc/%d/cmdline" % p.pid, "rb") as f:
            cmdline = f.read()
        assert key.encode() not in cmdline
        assert key[:16].encode() not in cmdline
        _check_plain(mnt, "gcm")
    finally:
        cu.unmount(mnt)
    assert p.wait(timeout=30) == 0


# Textual mutations of a valid config; veilfs -info must accept exactly the
# ones gocryptfs -info accepts (Go's encoding/json is the reference). One
# known difference is left out: a duplicate key whose last value is null
# ("R": 8, "R": null) keeps 8 in Go, while json-c keeps only the null.
DIFF_MUTATIONS = [
    ('"Version": 2', '"Version": 2.0'),
    ('"Version": 2', '"Version": 2e0'),
    ('"Version": 2', '"Version": -0'),
    ('"Version": 2', '"Version": 02'),
    ('"Version": 2', '"Version": true'),
    ('"Version": 2', '"Version": [2]'),
    ('"Version": 2', '"Version": 2, "Version": 3'),
    ('"Version": 2', '"Version": 3, "version": 2'),
    ('"N": 1024', '"N": 1024.5'),
    ('"N": 1024', '"N": 99999999999999999999999'),
    ('"N": 1024', '"N": -1024'),
    ('"HKDF"', '"\\u0048KDF"'),
    ('"HKDF"', '"HKDF "'),
    ('"HKDF"', '"hkdf"'),
    ('"HKDF",', '"HKDF", "HKDF",'),
    ('"Creator": "gocryptfs 2.3"', '"Creator": "\\u00e9\\ud83d\\ude00"'),
    ('"Creator": "gocryptfs 2.3"', '"Creator": ["x"]'),
    ('"EncryptedKey": "CBg1', '"EncryptedKey": "CBg1\\n'),
    ('"EncryptedKey": "CBg1', '"EncryptedKey": "CBg1\\r\\n'),
    ('"EncryptedKey": "CBg1', '"EncryptedKey": "CBg1 '),
    ('"EncryptedKey": "CBg1', '"EncryptedKey": "CBg1\\t'),
    ('/ZhbO/', '-ZhbO_'),
    ('g==', 'g='),
    ('g==', 'g'),
    ('g==', 'h=='),
    ('"Salt": "/DIk', '"salt": "/DIk'),
    ('"Salt": "/DIk', '"Salt": null, "Salt": "/DIk'),
    ('{', '\ufeff{'),
    ('{', ' \n\t{'),
    ('"Raw64"\n\t]', '"Raw64"\n\t],'),
    ('"Raw64"\n\t]', '"Raw64",\n\t]'),
    ('"Raw64"\n\t]\n}', '"Raw64"\n\t]\n}\n\n'),
    ('"Raw64"\n\t]\n}', '"Raw64"\n\t]\n}{}'),
    ('"Raw64"\n\t]\n}', '"Raw64"\n\t]\n} // x'),
    ('"Creator"', "'Creator'"),
    ('"Version": 2', '"Version": 2, "FIDO2": {"CredentialID": 5}'),
    ('"Version": 2', '"Version": 2, "FIDO2": {"hmacsalt": "AAAA", "x": 1}'),
    # AssertOptions is unknown to 2.3 (added in 2.5): ignored
    ('"Version": 2', '"Version": 2, "FIDO2": {"AssertOptions": [1]}'),
    ('"Version": 2', '"Version": 2, "FIDO2": {"AssertOptions": ["a"]}'),
    ('"Version": 2', '"Version": 2, "FIDO2": []'),
    ('"Version": 2', '"Version": 2, "x": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[['
     '[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]'),
    ('"Version": 2', '"Version": 2, "x": "\\q"'),
    ('"Version": 2', '"Version": 2, "x": "\\u12"'),
    ('"Version": 2', '"Version": 2, "x": "\t"'),
    ('"Version": 2', '"Version": 2, "x": NaN'),
    ('"Version": 2', '"Version": 2, "x": .5'),
    ('"Version": 2', '"Version": 2, "x": 1.'),
    ('"Version": 2', '"Version": 2, "x": +1'),
    ('"Version": 2', '"Version": 2, "x": TRUE'),
    ('"Version": 2', '"Version": 2, "LongNameMax": 255'),
    ('"Version": 2', '"Version": 2, "LongNameMax": 61'),
    ('"Raw64"', '"Raw64", "LongNameMax"'),
]


def test_config_reader_agrees_with_gocryptfs(tmp_path):
    base = _gcm_text()
    d = str(tmp_path / "c")
    os.mkdir(d)
    disagree = []
    for old, new in DIFF_MUTATIONS:
        assert old in base, old
        write_conf(d, base.replace(old, new, 1))
        v = veilfs("-info", d)
        g = gocryptfs("-info", d)
        assert v.returncode in (0, 8), v.err
        if v.returncode != g.returncode:
            disagree.append((new, v.returncode, g.returncode,
                             v.err.strip(), g.err.strip()))
        elif v.returncode == 0:
            assert cu.info_lines(v.out) == cu.info_lines(g.out), new
    assert not disagree, "\n".join(repr(x) for x in disagree)


def test_signal_during_prompt_restores_echo(tmp_path):
    """Ctrl-C at the password prompt must not leave the terminal without
    echo."""
    import pty
    import select
    import signal
    import termios
    d = str(tmp_path / "c")
    os.mkdir(d)
    master, slave = pty.openpty()
    p = subprocess.Popen([cu.VEILFS, "-init", "-gcm", "-scryptn", "10", d],
                         stdin=slave, stdout=slave, stderr=slave,
                         start_new_session=True)
    out = b""
    try:
        deadline = time.time() + 30
        while b"Password:" not in out and time.time() < deadline:
            r, _, _ = select.select([master], [], [], 0.2)
            if r:
                out += os.read(master, 4096)
        assert b"Password:" in out, out
        assert not termios.tcgetattr(slave)[3] & termios.ECHO
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=30) == -signal.SIGINT
        assert termios.tcgetattr(slave)[3] & termios.ECHO
    finally:
        if p.poll() is None:
            p.kill()
        os.close(master)
        os.close(slave)
    assert os.listdir(d) == []


def test_passwd_reverse_config(tmp_path):
    d = tmp_path / "plain"
    d.mkdir()
    src = os.path.join(cu.vector_dir("reverse"), "plain",
                       ".gocryptfs.reverse.conf")
    conf = str(d / ".gocryptfs.reverse.conf")
    with open(conf, "wb") as f:
        f.write(read(src))
    os.chmod(conf, 0o400)
    p = veilfs("-passwd", "-reverse", str(d), stdin="test\nrev2\n")
    assert p.returncode == 0, p.err
    assert stat.S_IMODE(os.stat(conf).st_mode) == 0o400
    assert cu.xray_key(conf, "rev2") == cu.vector_key("reverse")
    g = gocryptfs("-info", "-reverse", str(d))
    assert g.returncode == 0 and "AESSIV" in g.out


def test_init_reverse_plaintextnames_flags(tmp_path):
    d = tmp_path / "plain"
    d.mkdir()
    p = veilfs("-init", "-reverse", "-plaintextnames", "-scryptn", "10",
               str(d), stdin=PW + "\n")
    assert p.returncode == 0, p.err
    mine = json.loads(read(str(d / ".gocryptfs.reverse.conf")))
    vec = json.loads(read(os.path.join(cu.vector_dir("reverse-plaintextnames"),
                                       "plain", ".gocryptfs.reverse.conf")))
    assert mine["FeatureFlags"] == vec["FeatureFlags"]
    assert gocryptfs("-info", "-reverse", str(d)).returncode == 0


# ---- differences found in review (each compared with gocryptfs) --------------

def _unmount_if_mounted(mnt):
    """A test that expects a mount to be refused must not leave one
    behind when it is not."""
    if os.path.ismount(mnt):
        subprocess.run([cu.FUSERMOUNT, "-u", "-z", mnt])


def _new_dir(tmp_path, name):
    d = str(tmp_path / name)
    os.mkdir(d)
    return d


def _stored_password(conf, candidates):
    """Which of candidates unlocks the config (gocryptfs-xray decides)."""
    for c in candidates:
        p = cu.run([cu.XRAY, "-dumpmasterkey", conf], stdin=c + "\n")
        if p.returncode == 0:
            return c
    return None


def test_extpass_string_split_at_every_space(tmp_path):
    """One -extpass string is split at every space, as gocryptfs does: two
    spaces give an empty argument (echo then prints " test"), a trailing
    one an empty last argument, a leading one an empty command (exit 9)."""
    _require(cu.GOCRYPTFS and cu.XRAY, "gocryptfs and gocryptfs-xray")
    for run, name in ((veilfs, "v"), (gocryptfs, "g")):
        d = _new_dir(tmp_path, name)
        p = run("-init", "-q", "-scryptn", "10", "-extpass", "echo  test", d)
        assert p.returncode == 0, p.err
        conf = os.path.join(d, "gocryptfs.conf")
        assert _stored_password(conf, ["test", " test"]) == " test", name
    m = _new_dir(tmp_path, "m")
    for cmd, code in (("echo test ", 12), (" echo test", 9)):
        v = veilfs("-dumpmasterkey", "-extpass", cmd, str(tmp_path / "v"))
        assert v.returncode == code, (cmd, v.err)
        try:
            g = gocryptfs("-extpass", cmd, str(tmp_path / "g"), m)
        finally:
            _unmount_if_mounted(m)
        assert g.returncode == code, (cmd, g.err)


def test_extpass_program_gets_no_stdin(tmp_path):
    """The -extpass program's stdin is /dev/null, as under gocryptfs: a
    password on our stdin is not for it (head -n1 then prints nothing:
    an empty password, exit 9)."""
    d = _new_dir(tmp_path, "c")
    p = veilfs("-init", "-q", "-scryptn", "10", "-extpass", "echo test", d)
    assert p.returncode == 0, p.err
    v = veilfs("-dumpmasterkey", "-extpass", "head -n1", d,
               stdin="test\n")
    assert v.returncode == 9, v.err
    if cu.GOCRYPTFS:
        m = _new_dir(tmp_path, "m")
        try:
            g = gocryptfs("-extpass", "head -n1", d, m, stdin="test\n")
        finally:
            _unmount_if_mounted(m)
        assert g.returncode == 9, g.err


def test_init_ignores_zerokey(tmp_path):
    """-init -zerokey makes a random master key, as gocryptfs does (an
    all-zero key was once written into the new config)."""
    _require(cu.XRAY, "gocryptfs-xray")
    d = _new_dir(tmp_path, "c")
    p = veilfs("-init", "-q", "-scryptn", "10", "-zerokey", "-extpass",
               "echo test", d)
    assert p.returncode == 0, p.err
    key = cu.xray_key(os.path.join(d, "gocryptfs.conf"), "test")
    assert key.replace("-", "").strip("0") != "", key


def test_scryptn_zero_or_below_is_the_default(tmp_path):
    """-scryptn 0 or below means the default (N = 2^16) at -init and at
    -passwd, as gocryptfs takes it."""
    d = _new_dir(tmp_path, "c")
    p = veilfs("-init", "-q", "-scryptn=0", "-extpass", "echo test", d)
    assert p.returncode == 0, p.err
    conf = os.path.join(d, "gocryptfs.conf")
    assert json.loads(read(conf))["ScryptObject"]["N"] == 65536
    d2 = _new_dir(tmp_path, "c2")
    p = veilfs("-init", "-q", "-scryptn=10", "-extpass", "echo test", d2)
    assert p.returncode == 0, p.err
    p = veilfs("-passwd", "-scryptn=-3", d2, stdin="test\nnew\n")
    assert p.returncode == 0, p.err
    conf2 = os.path.join(d2, "gocryptfs.conf")
    assert json.loads(read(conf2))["ScryptObject"]["N"] == 65536


def test_passfile_and_extpass_together(gcmdir, tmp_path):
    """-passfile and -extpass together are a usage error (1), as in
    gocryptfs, not one of them silently ignored."""
    pw = str(tmp_path / "pw")
    with open(pw, "w") as f:
        f.write("test\n")
    m = _new_dir(tmp_path, "m")
    for run in (veilfs, gocryptfs):
        try:
            p = run("-passfile", pw, "-extpass", "echo wrong", gcmdir, m)
        finally:
            _unmount_if_mounted(m)
        assert p.returncode == 1, p.err
        assert "cannot be used at the same time" in p.err, p.err


def test_masterkey_stdin_empty(gcmdir, tmp_path):
    """-masterkey=stdin with nothing on stdin: exit 9, as gocryptfs."""
    m = _new_dir(tmp_path, "m")
    for run in (veilfs, gocryptfs):
        try:
            p = run("-masterkey=stdin", gcmdir, m, stdin="")
        finally:
            _unmount_if_mounted(m)
        assert p.returncode == 9, p.err
