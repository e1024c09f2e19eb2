# SPDX-License-Identifier: MIT
"""The mount flags of gocryptfs -hh that change what a user sees, each
checked the way a user would, side by side with gocryptfs 2.3 where both
can run: the kernel options (-dev, -suid, -exec, their no- forms, -ko and
their precedence), a script on a -noexec mount, a setuid binary run by
another user, device files, -kernel_cache, -acl (enforced, kept in the
backing files' system.posix_acl_* xattrs, read back by gocryptfs),
-force_owner seen by another uid, -notifypid, -serialize_reads, -idle,
-wpanic, -fusedebug, -openssl, -fido2 and FIDO2 configs, -noxattr (of
gocryptfs after 2.6.1), and the flags that are accepted without effect
(each leaves a note)."""

import base64
import errno
import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time

import pytest

import util

NOBODY = 65534


@pytest.fixture
def pubdir():
    """A directory other users can traverse (tmp_path is 0700). Request it
    before `mounter`: its teardown then runs after the mounts are gone; a
    mount still left inside is detached first."""
    d = tempfile.mkdtemp(prefix="veilfs-pub-")
    os.chmod(d, 0o755)
    try:
        yield d
    finally:
        for e in os.listdir(d):
            p = os.path.join(d, e)
            if os.path.ismount(p):
                subprocess.run([util.FUSERMOUNT, "-u", "-z", p])
        shutil.rmtree(d, ignore_errors=True)


def as_user(cmd, uid=NOBODY, gid=NOBODY, **kw):
    return subprocess.run(cmd, user=uid, group=gid, extra_groups=[],
                          stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=60 * util.SLOW, **kw)


def mount_opts(mnt):
    with open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if parts[1] == mnt:
                return [o for o in parts[3].split(",")
                        if not o.startswith("max_read=")]
    raise AssertionError("%s is not mounted" % mnt)


def _mount(mounter, cipherdir, binary, flags, mnt=None):
    return mounter.mount(cipherdir, binary=binary, mnt=mnt,
                         args=["-passfile", mounter.passfile] + flags)


KERNEL_FLAGS = [
    [], ["-dev"], ["-suid"], ["-exec"], ["-noexec"], ["-dev", "-nodev"],
    ["-suid", "-nosuid"], ["-exec", "-noexec"], ["-ko", "suid,dev"],
    ["-ko", "noexec"], ["-ko", "suid", "-nosuid"], ["-ko", "exec", "-noexec"],
    ["-ko", "nosuid", "-suid"], ["-ko", "nodev", "-dev"], ["-ro"],
    ["-ko", "ro"], ["-ro", "-rw"], ["-allow_other"], ["-acl"],
    ["-force_owner", "1234:4321"], ["-o", "noexec,dev"],
]


def test_kernel_options_and_precedence_as_gocryptfs(mounter, gocryptfs):
    """/proc/mounts shows the same options as under gocryptfs: -nodev,
    -nosuid and -noexec win over their opposites, -ro over -rw, and -ko
    comes last so it has the last word."""
    cipherdir = mounter.init()
    for flags in KERNEL_FLAGS:
        got = {}
        for b in (util.VEILFS_BIN, gocryptfs):
            m = _mount(mounter, cipherdir, b, flags)
            got[b] = mount_opts(m.mnt)
            mounter.unmount(m)
        assert got[util.VEILFS_BIN] == got[gocryptfs], flags


SCRIPT = b"#!/bin/sh\necho script-ran\n"


@pytest.mark.parametrize("flags,runs", [
    ([], True), (["-noexec"], False), (["-exec", "-noexec"], False),
    (["-ko", "exec", "-noexec"], True), (["-o", "noexec"], False)],
    ids=["default", "noexec", "exec-noexec", "ko-exec", "o-noexec"])
def test_noexec_script_does_not_run(mounter, gocryptfs, flags, runs):
    cipherdir = mounter.init()
    for b in (util.VEILFS_BIN, gocryptfs):
        m = _mount(mounter, cipherdir, b, flags)
        util.write_file(m.p("s.sh"), SCRIPT, 0o755)
        if runs:
            out = subprocess.run([m.p("s.sh")], capture_output=True,
                                 timeout=30 * util.SLOW)
            assert out.stdout == b"script-ran\n", (b, out)
        else:
            with pytest.raises(PermissionError):
                subprocess.run([m.p("s.sh")], timeout=30 * util.SLOW)
        mounter.unmount(m)


@pytest.mark.parametrize("flags,setuid", [
    ([], False), (["-suid"], True), (["-suid", "-nosuid"], False),
    (["-o", "suid"], True)], ids=["default", "suid", "nosuid-wins", "o-suid"])
def test_suid_binary_run_by_another_user(pubdir, mounter, gocryptfs, flags,
                                         setuid):
    cipherdir = mounter.init()
    for i, b in enumerate((util.VEILFS_BIN, gocryptfs)):
        m = _mount(mounter, cipherdir, b, ["-allow_other"] + flags,
                   mnt=os.path.join(pubdir, "m%d" % i))
        shutil.copyfile("/usr/bin/id", m.p("id"))
        os.chmod(m.p("id"), 0o4755)
        out = as_user([m.p("id")])
        assert out.returncode == 0, (b, out)
        assert (b"euid=0(" in out.stdout) == setuid, (b, out.stdout)
        assert out.stdout.startswith(b"uid=%d(" % NOBODY), out.stdout
        mounter.unmount(m)


def test_setid_bits_cleared_on_write(pubdir, mounter, gocryptfs):
    """A write, truncate or O_TRUNC open by a user without CAP_FSETID clears
    the set-id bits (veilfs does it itself: FUSE_HANDLE_KILLPRIV), a write by root
    keeps them, a chown clears them; stat shows it at once. The same steps
    on gocryptfs, where the kernel does it, give the same modes."""
    cipherdir = mounter.init()
    seen = {}
    for i, b in enumerate((util.VEILFS_BIN, gocryptfs)):
        m = _mount(mounter, cipherdir, b, ["-allow_other"],
                   mnt=os.path.join(pubdir, "m%d" % i))
        f = m.p("setid%d" % i)
        util.write_file(f, b"x" * 5000)
        modes = []

        def step(action):
            os.chmod(f, 0o6777)
            assert os.stat(f).st_mode & 0o7777 == 0o6777
            action()
            modes.append(os.stat(f).st_mode & 0o7777)

        def other(code):
            out = as_user(["python3", "-c", code, f])
            assert out.returncode == 0, out

        step(lambda: other("import sys; open(sys.argv[1], 'ab')"
                           ".write(b'y')"))
        step(lambda: other("import os, sys; os.truncate(sys.argv[1], 100)"))
        step(lambda: other("import sys; open(sys.argv[1], 'wb')"))
        def root_write():
            with open(f, "r+b") as fh:
                fh.write(b"root")

        step(root_write)
        step(lambda: os.chown(f, 0, 0))
        seen[b] = modes
        mounter.unmount(m)
    assert seen[util.VEILFS_BIN] == [0o777, 0o777, 0o777, 0o6777, 0o777], \
        seen
    assert seen[util.VEILFS_BIN] == seen[gocryptfs]


@pytest.mark.parametrize("flags,dev", [
    ([], False), (["-dev"], True), (["-dev", "-nodev"], False)],
    ids=["default", "dev", "nodev-wins"])
def test_device_files(mounter, gocryptfs, flags, dev):
    cipherdir = mounter.init()
    for b in (util.VEILFS_BIN, gocryptfs):
        m = _mount(mounter, cipherdir, b, flags)
        if not os.path.exists(m.p("null")):
            os.mknod(m.p("null"), 0o666 | 0o020000, os.makedev(1, 3))
        if dev:
            with open(m.p("null"), "wb") as f:
                f.write(b"x")
        else:
            with pytest.raises(PermissionError):
                open(m.p("null"), "wb")
        mounter.unmount(m)


@pytest.mark.parametrize("kernel_cache", [False, True])
def test_kernel_cache(mounter, gocryptfs, kernel_cache):
    """With -kernel_cache, a file re-opened keeps the kernel's cached pages
    even though another mount changed it behind our back (size and mtime
    kept, so nothing tells the kernel); without, the open drops them."""
    cipherdir = mounter.init()
    for b in (util.VEILFS_BIN, gocryptfs):
        a = _mount(mounter, cipherdir, b,
                   ["-kernel_cache"] if kernel_cache else [])
        other = _mount(mounter, cipherdir, b, [])
        util.write_file(a.p("kc"), b"A" * 8192)
        assert util.read_file(a.p("kc")) == b"A" * 8192
        st = os.stat(other.p("kc"))
        with open(other.p("kc"), "r+b") as f:
            f.write(b"B" * 8192)
        os.utime(other.p("kc"), ns=(st.st_atime_ns, st.st_mtime_ns))
        want = b"A" * 8192 if kernel_cache else b"B" * 8192
        assert util.read_file(a.p("kc")) == want, b
        mounter.unmount(other)
        mounter.unmount(a)


def test_ls_l_stops_asking_for_absent_labels(mounter, gocryptfs):
    """ls -l asks every file for its SELinux label: veilfs answers "not
    supported" for an absent one, and ls stops asking (one request per file
    less); a label that is there is read and listed as gocryptfs reads it."""
    cipherdir = mounter.init()
    m = _mount(mounter, cipherdir, util.VEILFS_BIN, ["-fusedebug"])
    os.mkdir(m.p("d"))
    for i in range(40):
        util.write_file(m.p("d", "f%d" % i), b"x")
    util.expect_errno(errno.EOPNOTSUPP, os.getxattr, m.p("d", "f1"),
                      "security.selinux")
    util.expect_errno(errno.ENODATA, os.getxattr, m.p("d", "f1"),
                      "user.absent")
    # 40 for the files' ACLs (absent: ENODATA, which the kernel does not
    # remember); 80 and more if ls kept asking for labels
    n = util.ls_xattr_requests(m, m.p("d"))
    assert 40 <= n <= 45, n
    # a label set by hand is kept (encrypted) and read back by both
    lbl = b"system_u:object_r:user_home_t:s0"
    os.setxattr(m.p("d", "f2"), "security.selinux", lbl)
    assert os.getxattr(m.p("d", "f2"), "security.selinux") == lbl
    assert os.listxattr(m.p("d", "f2")) == ["security.selinux"]
    mounter.unmount(m)
    g = _mount(mounter, cipherdir, gocryptfs, [])
    assert os.getxattr(g.p("d", "f2"), "security.selinux") == lbl
    mounter.unmount(g)


def test_noxattr(mounter, gocryptfs, tmp_path):
    """-noxattr: every xattr call fails with EOPNOTSUPP and ls -lR makes
    none past the first; the attributes already stored stay on the backing
    and are back after a mount without the flag; not with -acl."""
    cipherdir = mounter.init()
    m = _mount(mounter, cipherdir, util.VEILFS_BIN, [])
    util.write_file(m.p("f"), b"data")
    os.setxattr(m.p("f"), "user.kept", b"v")
    mounter.unmount(m)
    m = _mount(mounter, cipherdir, util.VEILFS_BIN,
               ["-noxattr", "-fusedebug"])
    for fn, args in ((os.getxattr, ("user.kept",)), (os.listxattr, ()),
                     (os.setxattr, ("user.new", b"1")),
                     (os.removexattr, ("user.kept",))):
        util.expect_errno(errno.EOPNOTSUPP, fn, m.p("f"), *args)
    assert util.read_file(m.p("f")) == b"data"
    os.mkdir(m.p("d"))
    for i in range(30):
        util.write_file(m.p("d", "f%d" % i), b"x")
    assert util.ls_xattr_requests(m, m.p("d")) == 0
    mounter.unmount(m)
    for b in (util.VEILFS_BIN, gocryptfs):
        m = _mount(mounter, cipherdir, b, [])
        assert os.getxattr(m.p("f"), "user.kept") == b"v", b
        assert os.listxattr(m.p("d", "f3")) == [], b
        mounter.unmount(m)
    mnt = str(tmp_path / "m")
    os.makedirs(mnt)
    p = subprocess.run([util.VEILFS_BIN, "-fg", "-passfile",
                        mounter.passfile, "-acl", "-noxattr", cipherdir,
                        mnt], stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=60 * util.SLOW)
    assert p.returncode == 1 and b"-noxattr" in p.stderr, p.stderr
    assert not os.path.ismount(mnt)


def _getfacl(path):
    p = subprocess.run(["getfacl", "-cp", path], capture_output=True,
                       timeout=30 * util.SLOW)
    assert p.returncode == 0, p.stderr
    return p.stdout.decode()


def _setfacl(*args):
    p = subprocess.run(["setfacl", *args], capture_output=True,
                       timeout=30 * util.SLOW)
    assert p.returncode == 0, p.stderr


def _backing(cipherdir, xray_rel):
    return os.path.join(cipherdir, xray_rel)


@pytest.fixture
def acl_tools():
    if not shutil.which("setfacl"):
        pytest.fail("setfacl is missing (scripts/deps.sh installs acl)") \
            if util.IN_CI else pytest.skip("setfacl is missing")


def test_acl_enforced_stored_plain_and_read_by_gocryptfs(
        pubdir, mounter, gocryptfs, acl_tools):
    cipherdir = mounter.init()
    v = _mount(mounter, cipherdir, util.VEILFS_BIN, ["-acl", "-allow_other"],
               mnt=os.path.join(pubdir, "v"))
    os.mkdir(v.p("d"), 0o755)
    util.write_file(v.p("d", "f"), b"secret\n", 0o600)
    assert as_user(["cat", v.p("d", "f")]).returncode != 0
    _setfacl("-m", "u:%d:r" % NOBODY, v.p("d", "f"))
    acl = _getfacl(v.p("d", "f"))
    assert "user:nobody:r--" in acl
    assert as_user(["cat", v.p("d", "f")]).stdout == b"secret\n"
    _setfacl("-d", "-m", "u:%d:rw" % NOBODY, v.p("d"))
    util.write_file(v.p("d", "new"), b"")
    inherited = _getfacl(v.p("d", "new"))
    assert "user:nobody:rw-" in inherited
    # kept as the real ACL xattr of the backing file, unencrypted
    stored = [os.path.join(r, n) for r, _, ns in os.walk(cipherdir)
              for n in ns if not n.startswith("gocryptfs.")]
    with_acl = [p for p in stored
                if "system.posix_acl_access" in os.listxattr(p)]
    assert len(with_acl) == 2, stored
    for p in with_acl:
        assert not [x for x in os.listxattr(p) if x.startswith("user.")]
    mounter.unmount(v)
    # gocryptfs -acl reads the same ACLs and enforces them
    g = _mount(mounter, cipherdir, gocryptfs, ["-acl", "-allow_other"],
               mnt=os.path.join(pubdir, "g"))
    assert _getfacl(g.p("d", "f")) == acl
    assert _getfacl(g.p("d", "new")) == inherited
    assert as_user(["cat", g.p("d", "f")]).stdout == b"secret\n"
    # and what gocryptfs sets, veilfs reads
    _setfacl("-m", "u:1234:rw", g.p("d", "f"))
    acl2 = _getfacl(g.p("d", "f"))
    mounter.unmount(g)
    v = _mount(mounter, cipherdir, util.VEILFS_BIN, ["-acl", "-allow_other"],
               mnt=os.path.join(pubdir, "v2"))
    assert _getfacl(v.p("d", "f")) == acl2
    assert "user:1234:rw-" in acl2
    mounter.unmount(v)
    # without -acl the ACL is kept but not enforced, as by gocryptfs
    for i, b in enumerate((util.VEILFS_BIN, gocryptfs)):
        m = _mount(mounter, cipherdir, b, ["-allow_other"],
                   mnt=os.path.join(pubdir, "n%d" % i))
        assert _getfacl(m.p("d", "f")) == acl2
        assert as_user(["cat", m.p("d", "f")]).returncode != 0, b
        mounter.unmount(m)


def test_force_owner_seen_by_another_uid(pubdir, mounter, gocryptfs):
    cipherdir = mounter.init()
    for i, b in enumerate((util.VEILFS_BIN, gocryptfs)):
        m = _mount(mounter, cipherdir, b, ["-force_owner", "1234:4321"],
                   mnt=os.path.join(pubdir, "m%d" % i))
        assert "allow_other" in mount_opts(m.mnt)  # implied
        if not os.path.exists(m.p("f")):
            util.write_file(m.p("f"), b"mine\n", 0o600)
        st = os.stat(m.p("f"))
        assert (st.st_uid, st.st_gid) == (1234, 4321), b
        out = as_user(["stat", "-c", "%u:%g", m.p("f"), m.mnt])
        assert out.stdout == b"1234:4321\n1234:4321\n", (b, out)
        # the kernel checks access against the owner shown
        assert as_user(["cat", m.p("f")], uid=1234, gid=4321).stdout == \
            b"mine\n"
        assert as_user(["cat", m.p("f")]).returncode != 0
        mounter.unmount(m)
    # the backing file keeps its real owner
    names = [n for n in os.listdir(cipherdir)
             if not n.startswith("gocryptfs.")]
    assert os.stat(os.path.join(cipherdir, names[0])).st_uid == 0


@pytest.mark.parametrize("bad", ["1234", "a:b", "1:", ":1", "-1:5",
                                 "4294967296:1", "1:2:3"])
def test_force_owner_malformed(mounter, tmp_path, gocryptfs, bad):
    cipherdir = mounter.init()
    mnt = str(tmp_path / "m")
    os.makedirs(mnt)
    for b in (util.VEILFS_BIN, gocryptfs):
        p = subprocess.run([b, "-fg", "-passfile", mounter.passfile,
                            "-force_owner", bad, cipherdir, mnt],
                           stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=60 * util.SLOW)
        assert p.returncode == 1, (b, p.stderr)
        assert b"force_owner" in p.stderr
        assert not os.path.ismount(mnt)


def test_notifypid(mounter):
    """SIGUSR1 once the mount is up. (A handler, not a blocked signal:
    pytest's other threads would take a blocked one and die of it.)"""
    cipherdir = mounter.init()
    got = threading.Event()
    old = signal.signal(signal.SIGUSR1, lambda *a: got.set())
    try:
        m = _mount(mounter, cipherdir, util.VEILFS_BIN,
                   ["-nosyslog", "-notifypid", str(os.getpid())])
        assert got.wait(30 * util.SLOW)
        assert os.path.ismount(m.mnt)
        mounter.unmount(m)
        # without the flag, no signal
        got.clear()
        m = _mount(mounter, cipherdir, util.VEILFS_BIN, [])
        mounter.unmount(m)
        assert not got.is_set()
    finally:
        signal.signal(signal.SIGUSR1, old)


def test_serialize_reads(mounter):
    """Reads are served one at a time: parallel readers of several files
    all get their data."""
    cipherdir = mounter.init()
    m = _mount(mounter, cipherdir, util.VEILFS_BIN, ["-serialize_reads"])
    data = {i: util.rand_bytes(300000 + i * 4099, i) for i in range(6)}
    for i, d in data.items():
        util.write_file(m.p("f%d" % i), d)
    errors = []

    def reader(i):
        for _ in range(3):
            if util.read_file(m.p("f%d" % i)) != data[i]:
                errors.append(i)

    ts = [threading.Thread(target=reader, args=(i,)) for i in data]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120 * util.SLOW)
    assert not errors
    mounter.unmount(m)


def _wait_exit(m, timeout):
    m.returncode = m.proc.wait(timeout=timeout)
    return m.returncode


def _mounted(mnt):
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == mnt for line in f)


@pytest.mark.parametrize("flag", ["-idle", "-i"])
def test_idle_unmounts_within_5s(mounter, flag):
    """-idle 2s: the daemon unmounts by itself and exits with code 0 (its
    keys go with it: the normal exit path wipes them). Nothing touches the
    mount meanwhile (a stat would be activity). The 5 s bound is the
    issue's: 2 s of idle time plus a tick of 0.2 s is all the daemon
    waits, a timer and no work."""
    cipherdir = mounter.init()
    m = _mount(mounter, cipherdir, util.VEILFS_BIN, [flag, "2s"])
    assert _wait_exit(m, 5 * util.SLOW) == 0, m.log()
    assert not _mounted(m.mnt)
    assert "unmounted" in m.log()
    assert util.wait_no_process(cipherdir) == []


def test_idle_kept_by_open_file_cwd_and_work(mounter):
    cipherdir = mounter.init()
    m = _mount(mounter, cipherdir, util.VEILFS_BIN, ["-idle", "1s"])
    util.write_file(m.p("f"), b"x")
    # an open file
    fd = os.open(m.p("f"), os.O_RDONLY)
    time.sleep(3)
    assert m.running and _mounted(m.mnt)
    os.close(fd)
    assert _wait_exit(m, 60 * util.SLOW) == 0
    # a process with its working directory inside
    m = _mount(mounter, cipherdir, util.VEILFS_BIN, ["-idle", "1s"])
    sh = subprocess.Popen(["sleep", "600"], cwd=m.mnt)
    try:
        time.sleep(3)
        assert m.running and _mounted(m.mnt)
    finally:
        sh.kill()
        sh.wait()
    assert _wait_exit(m, 60 * util.SLOW) == 0
    # a process working inside, without keeping anything open
    m = _mount(mounter, cipherdir, util.VEILFS_BIN, ["-idle", "1s"])
    end = time.monotonic() + 3
    while time.monotonic() < end:
        os.listdir(m.mnt)
        util.write_file(m.p("g"), b"y")
        time.sleep(0.1)
    assert m.running and _mounted(m.mnt)
    assert _wait_exit(m, 60 * util.SLOW) == 0


def test_idle_zero_stays_mounted(mounter):
    cipherdir = mounter.init()
    m = _mount(mounter, cipherdir, util.VEILFS_BIN, ["-idle", "0"])
    time.sleep(1.5)
    assert m.running
    mounter.unmount(m)


@pytest.mark.parametrize("bad", ["5", "abc", "1d", ""])
def test_idle_bad_duration(mounter, tmp_path, gocryptfs, bad):
    cipherdir = mounter.init()
    mnt = str(tmp_path / "m")
    os.makedirs(mnt)
    for b in (util.VEILFS_BIN, gocryptfs):
        p = subprocess.run([b, "-fg", "-passfile", mounter.passfile,
                            "-idle=" + bad, cipherdir, mnt],
                           stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=60 * util.SLOW)
        assert p.returncode == 1, (b, p.stderr)
        assert b"idle" in p.stderr
    assert not os.path.ismount(mnt)


def test_wpanic_exits_on_a_warning(mounter, gocryptfs, tmp_path):
    """A name that does not decrypt is a warning; with -wpanic both end
    the process with status 2."""
    cipherdir = mounter.init()
    util.write_file(os.path.join(cipherdir, "AAAAAAAAAAAAAAAAAAAAAA"), b"")
    for b in (util.VEILFS_BIN, gocryptfs):
        mnt = str(tmp_path / ("wp-" + os.path.basename(b)))
        os.makedirs(mnt)
        log = str(tmp_path / ("wp-%s.log" % os.path.basename(b)))
        with open(log, "wb") as lf:
            p = subprocess.Popen([b, "-fg", "-wpanic", "-passfile",
                                  mounter.passfile, cipherdir, mnt],
                                 stdin=subprocess.DEVNULL, stdout=lf,
                                 stderr=subprocess.STDOUT)
        try:
            util.wait_mounted(mnt, p, lambda: util.read_file(log).decode(),
                              gocryptfs=util.is_gocryptfs(b))
            try:
                os.listdir(mnt)
            except OSError:
                pass
            assert p.wait(timeout=30 * util.SLOW) == 2, b
            assert b"-wpanic" in util.read_file(log)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            subprocess.run([util.FUSERMOUNT, "-u", "-z", mnt])


def test_fusedebug_and_debug(mounter):
    cipherdir = mounter.init()
    m = _mount(mounter, cipherdir, util.VEILFS_BIN, ["-fusedebug"])
    os.listdir(m.mnt)
    mounter.unmount(m)
    assert "opcode: LOOKUP" in m.log() or "opcode: READDIR" in m.log() \
        or "unique:" in m.log()
    m = _mount(mounter, cipherdir, util.VEILFS_BIN, ["-d"])
    os.listdir(m.mnt)
    mounter.unmount(m)
    assert "debug:" in m.log() and "unique:" not in m.log()


@pytest.mark.parametrize("value,openssl", [("true", True), ("false", False)])
def test_openssl(mounter, value, openssl):
    cipherdir = mounter.init()
    m = _mount(mounter, cipherdir, util.VEILFS_BIN, ["-openssl=" + value])
    util.write_file(m.p("f"), b"z" * 10000)
    assert util.read_file(m.p("f")) == b"z" * 10000
    mounter.unmount(m)
    line = [x for x in m.log().splitlines() if "implementation" in x][0]
    assert ("OpenSSL" in line) == openssl, line


def test_ignored_flags_accepted_with_a_note(mounter):
    cipherdir = mounter.init()
    m = _mount(mounter, cipherdir, util.VEILFS_BIN,
               ["-devrandom", "-forcedecode", "-nofail", "-trace", "/t",
                "-cpuprofile", "/c", "-memprofile", "/m"])
    util.write_file(m.p("f"), b"ok")
    mounter.unmount(m)
    for flag in ("-devrandom", "-forcedecode", "-nofail", "-trace",
                 "-cpuprofile", "-memprofile"):
        assert flag + ":" in m.log(), flag
    for path in ("/t", "/c", "/m"):
        assert not os.path.exists(path)


def _fido2_conf(src_conf, dst_dir):
    with open(src_conf) as f:
        c = json.load(f)
    c["FeatureFlags"].append("FIDO2")
    c["FIDO2"] = {"CredentialID": base64.b64encode(bytes(range(64))).decode(),
                  "HMACSalt": base64.b64encode(bytes(32)).decode()}
    os.makedirs(dst_dir)
    with open(os.path.join(dst_dir, "gocryptfs.conf"), "w") as f:
        json.dump(c, f, indent="\t")


def test_fido2(mounter, gocryptfs, tmp_path):
    """No token on this machine: -fido2 is refused with gocryptfs's exit
    code 31 and one line; a FIDO2 config (written by hand) shows in -info
    as gocryptfs shows it, and mounting it without -fido2 is refused as
    gocryptfs refuses it (1: "need to use the --fido2 option")."""
    cipherdir = mounter.init()
    fdir = str(tmp_path / "fido2")
    _fido2_conf(os.path.join(cipherdir, "gocryptfs.conf"), fdir)
    v = subprocess.run([util.VEILFS_BIN, "-info", fdir], capture_output=True)
    g = subprocess.run([gocryptfs, "-info", fdir], capture_output=True)
    assert v.returncode == g.returncode == 0
    assert v.stdout == g.stdout
    assert b"FIDO2" in v.stdout
    mnt = str(tmp_path / "m")
    os.makedirs(mnt)
    newdir = str(tmp_path / "new")
    os.makedirs(newdir)
    for args, code in ((["-fido2", "/dev/hidraw0", cipherdir, mnt], 31),
                       (["-init", "-fido2", "/dev/hidraw0", newdir], 31),
                       (["-passfile", mounter.passfile, fdir, mnt], 1)):
        p = subprocess.run([util.VEILFS_BIN, "-fg"] + args,
                           stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=60 * util.SLOW)
        assert p.returncode == code, (args, p.stderr)
        if code == 1:  # (gocryptfs asks for a token only when needed)
            g = subprocess.run([gocryptfs, "-fg"] + args,
                               stdin=subprocess.DEVNULL,
                               capture_output=True, timeout=60 * util.SLOW)
            assert g.returncode == code, (args, g.stderr)
        assert p.stderr.count(b"\n") == 1 and b"FIDO2" in p.stderr, p.stderr
        assert not os.path.ismount(mnt)
    assert os.listdir(newdir) == []


def test_longnames_false_needs_support(mounter, tmp_path):
    cipherdir = mounter.init()
    mnt = str(tmp_path / "m")
    os.makedirs(mnt)
    p = subprocess.run([util.VEILFS_BIN, "-fg", "-zerokey", "-longnames=false",
                        cipherdir, mnt], stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=60 * util.SLOW)
    assert p.returncode == 1 and b"-longnames" in p.stderr, p.stderr


@pytest.mark.parametrize("flags", [
    ["-hkdf=false"], ["-raw64=false"], ["-hkdf=false", "-raw64=false"],
    ["-hkdf=false", "-aessiv"], ["-plaintextnames"]],
    ids=["nohkdf", "noraw64", "legacy", "nohkdf-siv", "plain"])
def test_masterkey_format_flags_as_gocryptfs(mounter, gocryptfs, tmp_path,
                                              flags):
    """-zerokey (or -masterkey) mounts take the format from flags: what
    gocryptfs writes with them veilfs reads with the same flags, and the
    other way round."""
    for first, second in ((gocryptfs, util.VEILFS_BIN),
                          (util.VEILFS_BIN, gocryptfs)):
        cipherdir = str(tmp_path / ("c-" + os.path.basename(first)))
        os.makedirs(cipherdir)
        if "-plaintextnames" not in flags:
            util.write_file(os.path.join(cipherdir, "gocryptfs.diriv"),
                            os.urandom(16), 0o444)
        args = ["-zerokey"] + flags
        m = mounter.mount(cipherdir, binary=first, args=args)
        os.mkdir(m.p("dir"))
        util.write_file(m.p("dir", "f"), b"legacy " * 1000)
        os.symlink("target", m.p("l"))
        mounter.unmount(m)
        m = mounter.mount(cipherdir, binary=second, args=args)
        assert sorted(os.listdir(m.mnt)) == ["dir", "l"]
        assert util.read_file(m.p("dir", "f")) == b"legacy " * 1000
        assert os.readlink(m.p("l")) == "target"
        mounter.unmount(m)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root (-allow_other, "
                    "another user)")
def test_create_of_a_file_made_behind_the_back(pubdir, mounter):
    """Unsupported, but no harm: another mount of the cipherdir makes a
    file after this mount's kernel cached the name as absent; a user's
    open(O_CREAT | O_TRUNC) then comes as a CREATE for a file that is
    there. It is opened as it is: it keeps its owner (an -allow_other
    mount run by root once chowned it to the user, as for a new file) and
    the truncate clears its set-user-ID bit, as any truncate by another
    user does."""
    cipherdir = mounter.init(("-gcm", "-plaintextnames"))
    m = _mount(mounter, cipherdir, util.VEILFS_BIN, ["-allow_other"],
               mnt=os.path.join(pubdir, "m0"))
    os.chmod(m.mnt, 0o777)
    f = m.p("f")
    assert as_user(["stat", f]).returncode != 0  # cached as absent now
    b = _mount(mounter, cipherdir, util.VEILFS_BIN, [],
               mnt=os.path.join(pubdir, "m1"))
    util.write_file(b.p("f"), b"root's\n")
    os.chmod(b.p("f"), 0o4777)
    mounter.unmount(b)
    code = ("import os, sys; fd = os.open(sys.argv[1], os.O_WRONLY | "
            "os.O_CREAT | os.O_TRUNC, 0o600); os.write(fd, b'x'); "
            "os.close(fd)")
    out = as_user(["python3", "-c", code, f])
    assert out.returncode == 0, out
    st = os.stat(os.path.join(cipherdir, "f"))
    assert (st.st_uid, st.st_gid) == (0, 0)
    assert stat.S_IMODE(st.st_mode) == 0o777
    assert util.read_file(f) == b"x"


@pytest.mark.parametrize("empty", ["-config=", "-masterkey=", "-passfile=",
                                   "-extpass=", "-fsname=", "-force_owner=",
                                   "-ctlsock="])
def test_an_empty_flag_value_is_no_value(mounter, gocryptfs, empty):
    """An empty value (a wrapper's -config="$CONF" with CONF unset) is as
    if the flag were not there, as in gocryptfs: the mount works (veilfs
    once took the empty string: exit 11, 9, 14, 10, 1 or 20)."""
    cipherdir = mounter.init()
    for b in (util.VEILFS_BIN, gocryptfs):
        m = _mount(mounter, cipherdir, b, [empty])
        util.write_file(m.p("f"), b"x")
        assert util.read_file(m.p("f")) == b"x"
        mounter.unmount(m)


def test_sigusr1_is_ignored(mounter):
    """SIGUSR1 (what -notifypid sends; a wrapper may send it to its whole
    process group) does not end the daemon, as in gocryptfs: it once died
    of it and left a dead mount."""
    cipherdir = mounter.init()
    m = _mount(mounter, cipherdir, util.VEILFS_BIN, [])
    os.kill(m.proc.pid, signal.SIGUSR1)
    util.write_file(m.p("f"), b"still here")
    assert util.read_file(m.p("f")) == b"still here"
    assert m.proc.poll() is None
    mounter.unmount(m)


def test_sigint_when_started_ignoring_it(mounter):
    """A daemon started with SIGINT ignored (a script's background job)
    still unmounts and ends on SIGINT, as gocryptfs does (libfuse leaves
    an ignored signal ignored)."""
    cipherdir = mounter.init()
    m = mounter.mount(cipherdir, args=["-passfile", mounter.passfile],
                      preexec=lambda: signal.signal(signal.SIGINT,
                                                    signal.SIG_IGN))
    os.kill(m.proc.pid, signal.SIGINT)
    _wait_exit(m, 30 * util.SLOW)
    assert not os.path.ismount(m.mnt)


def test_notifypid_child_holds_nothing_of_its_caller(mounter, tmp_path):
    """gocryptfs's way of daemonizing: a parent starts veilfs -fg
    -notifypid=PARENT and exits on SIGUSR1. The daemon then holds nothing
    of the caller: a caller that reads the parent's output gets its end at
    once (the daemon once kept the pipes, so that $(...) hung while the
    filesystem was mounted), and the daemon has a session of its own and
    its working directory at /."""
    cipherdir = mounter.init()
    mnt = str(tmp_path / "m")
    os.mkdir(mnt)
    pidfile = str(tmp_path / "pid")
    wrapper = tmp_path / "parent.sh"
    wrapper.write_text(
        "#!/bin/sh\n"
        "trap 'exit 0' USR1\n"
        "cd %s\n"
        "%s -fg -notifypid=$$ -passfile %s %s %s &\n"
        "echo $! > %s\n"
        "while :; do sleep 0.1; done\n"
        % (tmp_path, util.VEILFS_BIN, mounter.passfile, cipherdir, mnt,
           pidfile))
    wrapper.chmod(0o755)
    try:
        p = subprocess.run([str(wrapper)], capture_output=True,
                           stdin=subprocess.DEVNULL, timeout=60 * util.SLOW)
        assert p.returncode == 0, p.stderr
        assert os.path.ismount(mnt)
        with open(pidfile) as f:
            pid = int(f.read())
        assert os.readlink("/proc/%d/cwd" % pid) == "/"
        assert os.getsid(pid) == pid
        util.write_file(os.path.join(mnt, "f"), b"x")
    finally:
        if os.path.ismount(mnt):
            subprocess.run([util.FUSERMOUNT, "-u", "-z", mnt])


@pytest.mark.parametrize("order", ["flag-first", "o-first"])
def test_a_flag_given_directly_wins_over_o(mounter, gocryptfs, order):
    """A flag given on the command line wins over the same one among the
    -o items, wherever they stand (an fstab entry overridden by hand), as
    in gocryptfs: -fsname names the mount (veilfs took the later one)."""
    cipherdir = mounter.init()
    direct, items = ["-fsname", "fromflag"], ["-o", "fsname=fromo"]
    for b in (util.VEILFS_BIN, gocryptfs):
        flags = direct + items if order == "flag-first" else items + direct
        m = _mount(mounter, cipherdir, b, flags)
        with open("/proc/self/mountinfo") as f:
            src = [ln.split(" - ")[1].split()[1] for ln in f
                   if ln.split()[4] == m.mnt]
        assert src == ["fromflag"], b
        mounter.unmount(m)


def test_an_o_item_nobody_takes_is_a_usage_error(mounter, gocryptfs,
                                                tmp_path):
    """-o bogus: exit 1 before any password is read, as gocryptfs (veilfs
    asked for the password, decrypted the master key and then failed with
    exit 11). Options FUSE or the kernel take still pass."""
    cipherdir = mounter.init()
    mnt = str(tmp_path / "m")
    os.mkdir(mnt)
    missing = str(tmp_path / "no-such-passfile")
    for b in (util.VEILFS_BIN, gocryptfs):
        p = subprocess.run([b, "-passfile", missing, "-o", "bogus",
                            cipherdir, mnt], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=60 * util.SLOW)
        assert p.returncode == 1, (b, p.stderr)
        assert b"bogus" in p.stderr
        assert not os.path.ismount(mnt)
    m = _mount(mounter, cipherdir, util.VEILFS_BIN, ["-o", "noatime"])
    util.write_file(m.p("f"), b"x")
    mounter.unmount(m)
