# SPDX-License-Identifier: MIT
"""Mount lifecycle as a user sees it: after fusermount3 -u (or SIGTERM) no
daemon and no mount remain; a mount that fails (wrong password, missing
mount point) exits with gocryptfs's code and leaves nothing behind;
daemonized mode returns only once the filesystem is usable; -ro,
-allow_other and passwords from stdin."""

import errno
import os
import signal
import subprocess

import pytest

import util
from util import expect_errno, read_file, write_file


def _mounted(mnt):
    mnt = os.path.realpath(mnt)
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == mnt for line in f)


def test_unmount_leaves_nothing(mounter):
    cipherdir = mounter.init()
    m = mounter.mount(cipherdir)
    write_file(m.p("f"), b"data")
    assert m.running
    assert m.proc.pid in util.pids_with_arg(cipherdir)
    mounter.unmount(m)
    assert m.returncode == 0
    assert not os.path.ismount(m.mnt)
    assert not _mounted(m.mnt)
    assert util.wait_no_process(cipherdir) == []
    # the data is there on the next mount
    m2 = mounter.mount(cipherdir)
    assert read_file(m2.p("f")) == b"data"


def test_sigterm_unmounts(mounter):
    cipherdir = mounter.init()
    m = mounter.mount(cipherdir)
    write_file(m.p("f"), b"data")
    m.proc.send_signal(signal.SIGTERM)
    # a clean exit, not death by the signal (gocryptfs exits with 15)
    m.ok_codes = (0, 15)
    m.returncode = m.proc.wait(timeout=30 * util.SLOW)
    assert m.returncode in m.ok_codes, m.log()
    assert not _mounted(m.mnt)
    assert util.suspicious_lines(m.log()) == []


def _block_sigterm():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})


def test_sigterm_unmounts_when_the_parent_blocked_it(mounter):
    """A blocked signal mask survives exec: a launcher that blocks SIGTERM
    and SIGINT for itself and forgets to unblock them before it starts the
    daemon must not leave a daemon that no kill can unmount cleanly (Go
    programs such as gocryptfs unblock them at start; so do we)."""
    cipherdir = mounter.init()
    m = mounter.mount(cipherdir, preexec=_block_sigterm)
    write_file(m.p("f"), b"data")
    m.proc.send_signal(signal.SIGTERM)
    m.ok_codes = (0,)
    try:
        m.returncode = m.proc.wait(timeout=30 * util.SLOW)
    except subprocess.TimeoutExpired:
        pytest.fail("the daemon ignored SIGTERM: %s" % m.log())
    assert m.returncode == 0, m.log()
    assert not _mounted(m.mnt)


def _run(cmd, timeout=None, **kw):
    return subprocess.run(cmd, stdin=kw.pop("stdin", subprocess.DEVNULL),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=timeout or 60 * util.SLOW, **kw)


@pytest.mark.parametrize("fg", [True, False], ids=["fg", "daemon"])
def test_wrong_password(mounter, tmp_path, fg):
    cipherdir = mounter.init()
    wrong = util.write_passfile(str(tmp_path / "wrong"), "wrong")
    mnt = str(tmp_path / "m")
    os.mkdir(mnt)
    cmd = util.cmd_prefix(util.VEILFS_BIN) + [util.VEILFS_BIN] + \
        (["-fg"] if fg else []) + ["-passfile", wrong, cipherdir, mnt]
    p = _run(cmd)
    out = p.stdout.decode(errors="replace")
    assert p.returncode == 12, out
    assert not _mounted(mnt)
    assert util.wait_no_process(cipherdir) == []
    assert util.suspicious_lines(out) == []


@pytest.mark.parametrize("fg", [True, False], ids=["fg", "daemon"])
def test_missing_mountpoint(mounter, tmp_path, fg):
    cipherdir = mounter.init()
    mnt = str(tmp_path / "does-not-exist")
    cmd = util.cmd_prefix(util.VEILFS_BIN) + [util.VEILFS_BIN] + \
        (["-fg"] if fg else []) + ["-passfile", mounter.passfile,
                                   cipherdir, mnt]
    p = _run(cmd)
    assert p.returncode == 10, p.stdout.decode(errors="replace")
    assert not os.path.exists(mnt)
    assert util.wait_no_process(cipherdir) == []


def test_daemonized_returns_when_ready(mounter, tmp_path):
    cipherdir = mounter.init()
    mnt = str(tmp_path / "m")
    os.mkdir(mnt)
    log = str(tmp_path / "daemon.log")
    cmd = util.cmd_prefix(util.VEILFS_BIN) + [
        util.VEILFS_BIN, "-nosyslog", "-passfile", mounter.passfile,
        cipherdir, mnt]
    mounter.repro.append(util.quote(cmd))
    with open(log, "wb") as logf:
        rc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=logf,
                            stderr=subprocess.STDOUT,
                            timeout=60 * util.SLOW).returncode
    try:
        assert rc == 0, read_file(log)
        # no polling: the mount must be usable right away
        assert os.path.ismount(mnt)
        write_file(os.path.join(mnt, "f"), b"daemon")
        assert read_file(os.path.join(mnt, "f")) == b"daemon"
        assert util.pids_with_arg(cipherdir) != []
    finally:
        subprocess.run([util.FUSERMOUNT, "-u", mnt],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert not _mounted(mnt)
    assert util.wait_no_process(cipherdir) == []
    with open(log, errors="replace") as f:
        assert util.suspicious_lines(f.read()) == []
    m = mounter.mount(cipherdir)
    assert read_file(m.p("f")) == b"daemon"


def test_daemonized_says_ready_on_the_terminal(mounter, tmp_path):
    """In the background (logging to syslog once mounted) the ready line
    still reaches the terminal, as gocryptfs's does (it went to syslog
    only), and the command's output ends (the daemon keeps no copy of the
    terminal: a $(...) around the command returns)."""
    cipherdir = mounter.init()
    mnt = str(tmp_path / "m")
    os.mkdir(mnt)
    cmd = util.cmd_prefix(util.VEILFS_BIN) + [
        util.VEILFS_BIN, "-passfile", mounter.passfile, cipherdir, mnt]
    mounter.repro.append(util.quote(cmd))
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=60 * util.SLOW)
        out = p.stdout.decode(errors="replace")
        assert p.returncode == 0, out
        assert out.rstrip().endswith("Filesystem mounted and ready."), out
        assert os.path.ismount(mnt)
    finally:
        subprocess.run([util.FUSERMOUNT, "-u", mnt],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert util.wait_no_process(cipherdir) == []


def test_read_only(mounter):
    cipherdir = mounter.init()
    m = mounter.mount(cipherdir)
    write_file(m.p("f"), b"content")
    os.mkdir(m.p("d"))
    mounter.unmount(m)
    before = util.snapshot(cipherdir)
    ro = mounter.mount(cipherdir, args=["-ro", "-passfile",
                                        mounter.passfile])
    assert read_file(ro.p("f")) == b"content"
    expect_errno(errno.EROFS, os.open, ro.p("g"), os.O_CREAT | os.O_WRONLY,
                 0o644)
    expect_errno(errno.EROFS, os.open, ro.p("f"), os.O_WRONLY)
    expect_errno(errno.EROFS, os.unlink, ro.p("f"))
    expect_errno(errno.EROFS, os.mkdir, ro.p("e"))
    expect_errno(errno.EROFS, os.rmdir, ro.p("d"))
    expect_errno(errno.EROFS, os.rename, ro.p("f"), ro.p("g"))
    expect_errno(errno.EROFS, os.chmod, ro.p("f"), 0o600)
    expect_errno(errno.EROFS, os.setxattr, ro.p("f"), "user.x", b"1")
    expect_errno(errno.EROFS, os.truncate, ro.p("f"), 0)
    mounter.unmount(ro)
    assert util.snapshot(cipherdir) == before


@pytest.mark.skipif(os.getuid() != 0, reason="-allow_other needs root "
                    "or user_allow_other")
def test_allow_other(mounter):
    cipherdir = mounter.init()
    m = mounter.mount(cipherdir, args=["-allow_other", "-passfile",
                                       mounter.passfile])
    mnt = os.path.realpath(m.mnt)
    with open("/proc/self/mountinfo") as f:
        line = next(x for x in f if x.split()[4] == mnt)
    assert "allow_other" in line
    write_file(m.p("f"), b"x")
    assert read_file(m.p("f")) == b"x"


def test_password_on_stdin(mounter, tmp_path):
    cipherdir = str(tmp_path / "c")
    os.mkdir(cipherdir)
    cmd = util.cmd_prefix(util.VEILFS_BIN) + [
        util.VEILFS_BIN, "-init", "-scryptn", "10", cipherdir]
    p = _run(cmd, input=b"test\n", stdin=None)
    assert p.returncode == 0, p.stdout.decode(errors="replace")
    assert os.path.exists(os.path.join(cipherdir, "gocryptfs.conf"))
    # mount with the password on stdin, in the foreground
    mnt = str(tmp_path / "m")
    os.mkdir(mnt)
    log = str(tmp_path / "stdin-mount.log")
    cmd = util.cmd_prefix(util.VEILFS_BIN) + [util.VEILFS_BIN, "-fg",
                                              cipherdir, mnt]
    with open(log, "wb") as logf:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=logf,
                                stderr=subprocess.STDOUT)
    proc.stdin.write(b"test\n")
    proc.stdin.close()
    try:
        util.wait_mounted(mnt, proc, lambda: open(log).read(),
                          gocryptfs=util.is_gocryptfs(util.VEILFS_BIN))
        write_file(os.path.join(mnt, "f"), b"x")
    finally:
        subprocess.run([util.FUSERMOUNT, "-u", mnt],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            rc = proc.wait(timeout=30 * util.SLOW)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
    assert rc == 0, open(log).read()
    # and the same password works from a file
    m = mounter.mount(cipherdir)
    assert read_file(m.p("f")) == b"x"
