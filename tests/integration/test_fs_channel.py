# SPDX-License-Identifier: MIT
"""The request channel (src/fs/chan.c): after a request, one worker polls
for the next one for a short while before it sleeps; the others wait for
its baton. Checked here: the daemon really takes requests by polling (its
-d summary at unmount) and takes none that way with VEILFS_SPIN_US=0; an
idle daemon does not spin; and a mixed concurrent load (metadata, small
and large I/O from several threads at once, which hands the baton around
and sends replies on both /dev/fuse descriptors) gives correct results with
polling on and off."""

import errno
import os
import re
import threading
import time

import pytest

import util
from util import read_file, write_file

SUMMARY = re.compile(r"requests: (\d+) taken by polling, (\d+) after "
                     r"sleeping")
HANDED = re.compile(r"the baton handed on (\d+) times")


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def mixed_load(m, seconds=3.0, rounds=20):
    """Eight threads for about `seconds`, each doing at least `rounds`
    rounds (so the amount of work does not depend on spare CPU): metadata
    churn, small and large files written and read back, listings, xattrs.
    Returns the errors."""
    errors = []
    stop = time.monotonic() + seconds

    def more(i):
        return i < rounds or time.monotonic() < stop

    def meta(t):
        d = m.p("meta%d" % t)
        os.mkdir(d)
        i = 0
        while more(i):
            p = os.path.join(d, "f%d" % (i % 50))
            data = ("%d-%d\n" % (t, i)).encode() * (i % 7 + 1)
            write_file(p, data)
            os.setxattr(p, "user.k", data[:20])
            if read_file(p) != data or os.getxattr(p, "user.k") != data[:20]:
                errors.append("meta %d: %s read back wrong" % (t, p))
            os.rename(p, p + ".r")
            if i % 3 == 0:
                os.unlink(p + ".r")
            os.listdir(d)
            i += 1

    def bulk(t):
        p = m.p("bulk%d" % t)
        i = 0
        while more(i // 4):
            data = os.urandom((1 << 20) + 4096 * (i % 5) + t)
            write_file(p, data)
            if read_file(p) != data:
                errors.append("bulk %d: content differs" % t)
            with open(p, "rb") as f:
                f.seek(12345)
                if f.read(4096) != data[12345:12345 + 4096]:
                    errors.append("bulk %d: small read differs" % t)
            i += 1

    def guard(fn, t):
        try:
            fn(t)
        except Exception as e:  # reported below with the thread's name
            errors.append("%s %d: %r" % (fn.__name__, t, e))

    threads = [threading.Thread(target=guard, args=(meta, t))
               for t in range(5)]
    threads += [threading.Thread(target=guard, args=(bulk, t))
                for t in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return errors


def request_summary(m):
    s = SUMMARY.findall(m.log())
    assert s, "no request summary in the -d log"
    return tuple(map(int, s[-1]))


@pytest.mark.parametrize("spin", [None, "0", "2000"])
def test_mixed_load_with_and_without_polling(mounter, monkeypatch, spin):
    if spin is None:
        monkeypatch.delenv("VEILFS_SPIN_US", raising=False)
    else:
        monkeypatch.setenv("VEILFS_SPIN_US", spin)
    cipherdir = mounter.init()
    m = mounter.mount(cipherdir, args=["-d", "-passfile", mounter.passfile])
    errors = mixed_load(m)
    assert not errors, errors[:5]
    mounter.unmount(m)
    polled, slept = request_summary(m)
    # 5 x 20 metadata rounds of 8+ requests each, at least
    assert polled + slept > 800, (polled, slept)
    if spin == "0":
        assert polled == 0, (polled, slept)


def test_polling_takes_synchronous_requests(mounter, monkeypatch):
    """The mechanism, not a rate: with the longest poll (10 ms), requests
    of a synchronous caller are taken by polling. getxattr always reaches
    the daemon (the kernel caches no xattrs), and a caller that is not
    scheduled again within 10 ms on a busy machine only costs a miss; of
    2000 such requests some are taken by polling whatever the load."""
    monkeypatch.setenv("VEILFS_SPIN_US", "10000")
    cipherdir = mounter.init()
    m = mounter.mount(cipherdir, args=["-d", "-passfile", mounter.passfile])
    write_file(m.p("f"), b"x")
    for i in range(2000):
        try:
            os.getxattr(m.p("f"), "user.none")
        except OSError:
            pass
    mounter.unmount(m)
    polled, slept = request_summary(m)
    assert polled > 0, (polled, slept)


def test_ioctls_answered_without_handing_the_baton_on(mounter):
    """veilfs implements no ioctl, and the kernel sends every ioctl on a
    file to the daemon (Python's open() checks isatty on each file): the
    leader answers them itself, rather than handing the baton to another
    worker (a wake-up) for each. A synchronous caller queues nothing else,
    so 2000 ioctls leave the baton with the leader nearly always; counted
    from the -d summary, not timed."""
    import fcntl
    import termios
    cipherdir = mounter.init()
    m = mounter.mount(cipherdir, args=["-d", "-passfile", mounter.passfile])
    write_file(m.p("f"), b"x" * 100)
    fd = os.open(m.p("f"), os.O_RDONLY)
    try:
        for i in range(2000):
            assert not os.isatty(fd)
        with pytest.raises(OSError) as e:
            fcntl.ioctl(fd, termios.TCGETS, bytes(64))
        assert e.value.errno == errno.ENOTTY
        assert os.read(fd, 200) == b"x" * 100
    finally:
        os.close(fd)
    mounter.unmount(m)
    handed = HANDED.findall(m.log())
    assert handed, "no hand-off count in the -d summary"
    polled, slept = request_summary(m)
    assert polled + slept > 2000, (polled, slept)
    assert int(handed[-1]) < 200, handed[-1]


def test_idle_daemon_does_not_spin(mounter):
    cipherdir = mounter.init()
    m = mounter.mount(cipherdir)
    p = m.p("f")
    write_file(p, b"x" * 10000)
    for i in range(2000):  # a synchronous burst: polling switched on
        os.stat(p)
        read_file(p)
    time.sleep(0.3)
    t0 = cpu_ticks(m.proc.pid)
    time.sleep(2.0)
    used = cpu_ticks(m.proc.pid) - t0
    hz = os.sysconf("SC_CLK_TCK")
    assert used <= hz // 20, "idle daemon used %d ticks in 2 s" % used
    assert read_file(p) == b"x" * 10000


def test_read_ahead_raised_after_init(mounter, tmp_path):
    """As root the daemon raises the mount's read-ahead to 512 KiB once the
    INIT reply has set it (found through mountinfo, never through the
    mount itself); the mount point's name may need escaping there."""
    if os.geteuid() != 0:
        pytest.skip("only root may change read_ahead_kb")
    cipherdir = mounter.init()
    mnt = os.path.join(str(tmp_path), "mount point\twith blanks")
    m = mounter.mount(cipherdir, mnt=mnt)
    st = os.stat(m.mnt)
    dev = "%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev))
    # The daemon writes it right after sending the INIT reply, so the
    # mount may be visible a moment before: wait for it (a hang guard, not
    # a timing assertion).
    path = "/sys/class/bdi/%s/read_ahead_kb" % dev
    deadline = time.monotonic() + 10 * util.SLOW
    while True:
        with open(path) as f:
            kb = int(f.read())
        if kb == 512 or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert kb == 512
    data = os.urandom(3 << 20)
    write_file(m.p("f"), data)
    assert read_file(m.p("f")) == data
