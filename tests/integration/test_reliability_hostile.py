# SPDX-License-Identifier: MIT
"""A hostile cipherdir (doc/threat-model.md): whoever can change the
cipherdir may make reads fail, but never make the daemon hang or crash.

Checked here, each with request polling on (the default) and off
(VEILFS_SPIN_US=0):
  - a FIFO in place of a directory's gocryptfs.diriv, of a long name's
    .name sidecar and of a regular file: the request touching it fails (or
    hides the entry) at once, and every other request is answered;
  - a request stuck in the backing filesystem, however long: the backing
    directory of one plaintext directory is the mount point of a second
    FUSE filesystem whose daemon we stop (SIGSTOP); while a listing of that
    directory waits for it, other requests are still answered.
Every operation on the mount under test runs in a child process with a
hang guard, so that a regression fails the test instead of hanging it.
"""

import os
import signal
import stat
import subprocess
import sys
import time

import pytest

import util
from reliab_util import long_stage
from util import write_file

# Hang guard for one child process (seconds), generous for a busy machine.
GUARD = 20 * util.SLOW

SPINS = [None, "0"]


def set_spin(monkeypatch, spin):
    if spin is None:
        monkeypatch.delenv("VEILFS_SPIN_US", raising=False)
    else:
        monkeypatch.setenv("VEILFS_SPIN_US", spin)


def new_entry(cipherdir, before):
    """The one backing name in cipherdir that is not in before."""
    new = set(os.listdir(cipherdir)) - before
    assert len(new) == 1, new
    return new.pop()


def guarded(code, timeout=GUARD):
    """Run python CODE in a child; returns its stdout (stripped). A child
    still running after timeout is killed and the test fails."""
    p = subprocess.Popen([sys.executable, "-c", code],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail("hung for %ds: %s" % (timeout, code))
    return out.decode(errors="replace").strip()


def listing(path):
    return ("import os\ntry:\n print(sorted(os.listdir(%r)))\n"
            "except OSError as e:\n print('errno', e.errno)" % path)


def reading(path):
    return ("try:\n print(open(%r).read())\n"
            "except OSError as e:\n print('errno', e.errno)" % path)


def others_answered(m):
    """Requests that never come from a cache: a new file written and read
    back, a listing. Returns the child's output."""
    p = m.p("other", "new%d" % time.monotonic_ns())
    return guarded("import os\nopen(%r, 'w').write('fresh')\n"
                   "print(open(%r).read(), len(os.listdir(%r)))"
                   % (p, p, m.p("other")))


def meanwhile(m, code, what):
    """Start python CODE in a child, check that other requests are answered
    while it runs, then return its output; fail if it hangs."""
    p = subprocess.Popen([sys.executable, "-c", code],
                         stdout=subprocess.PIPE)
    assert others_answered(m).startswith("fresh 2")
    try:
        out, _ = p.communicate(timeout=GUARD)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail(what + " hung")
    return out.decode().strip()


def unblock(fifo):
    """Let a daemon thread blocked opening fifo for reading go on (an old
    binary; the fixed one never opens it that way)."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
    except OSError:
        pass


def prepare(mounter):
    """A cipherdir with sub/ (backing name returned), other/g and a long
    name in sub/. Unmounted again, so the next mount caches nothing."""
    c = mounter.init()
    m = mounter.mount(c)
    before = set(os.listdir(c))
    os.mkdir(m.p("sub"))
    enc = new_entry(c, before)
    write_file(m.p("sub", "f"), b"x")
    write_file(m.p("sub", "L" * 200), b"long")
    os.mkdir(m.p("other"))
    write_file(m.p("other", "g"), b"y")
    mounter.unmount(m)
    return c, enc


@pytest.mark.parametrize("spin", SPINS)
def test_fifo_diriv(mounter, monkeypatch, spin):
    set_spin(monkeypatch, spin)
    c, enc = prepare(mounter)
    fifo = os.path.join(c, enc, "gocryptfs.diriv")
    os.unlink(fifo)
    os.mkfifo(fifo)
    m = mounter.mount(c)
    try:
        out = meanwhile(m, listing(m.p("sub")),
                        "listing a directory whose diriv is a FIFO")
        assert out == "errno 5"
        assert "missing or corrupt gocryptfs.diriv" in m.log()
    finally:
        unblock(fifo)
    mounter.unmount(m)


@pytest.mark.parametrize("spin", SPINS)
def test_fifo_longname_sidecar(mounter, monkeypatch, spin):
    set_spin(monkeypatch, spin)
    c, enc = prepare(mounter)
    sides = [n for n in os.listdir(os.path.join(c, enc))
             if n.endswith(".name")]
    assert len(sides) == 1, sides
    fifo = os.path.join(c, enc, sides[0])
    os.unlink(fifo)
    os.mkfifo(fifo)
    m = mounter.mount(c)
    try:
        out = meanwhile(m, listing(m.p("sub")),
                        "listing with a FIFO .name sidecar")
        # the long name is hidden, the rest listed
        assert out == "['f']"
        assert "bad or missing .name file" in m.log()
    finally:
        unblock(fifo)
    mounter.unmount(m)


@pytest.mark.parametrize("spin", SPINS)
def test_fifo_in_place_of_file(mounter, monkeypatch, spin):
    """Swapped after the kernel looked the file up, so that the daemon,
    not the kernel, opens the FIFO."""
    set_spin(monkeypatch, spin)
    c, enc = prepare(mounter)
    m = mounter.mount(c)
    os.stat(m.p("sub", "f"))
    names = [n for n in os.listdir(os.path.join(c, enc))
             if n != "gocryptfs.diriv" and not n.startswith("gocryptfs.")]
    assert len(names) == 1, names
    fifo = os.path.join(c, enc, names[0])
    os.unlink(fifo)
    os.mkfifo(fifo)
    try:
        out = meanwhile(m, reading(m.p("sub", "f")),
                        "opening a file swapped for a FIFO")
        assert out.startswith("errno ")
        # and O_CREAT on that name never waits either
        out = guarded("import os\ntry:\n"
                      " os.close(os.open(%r, os.O_WRONLY | os.O_CREAT))\n"
                      " print('opened')\n"
                      "except OSError as e:\n print('errno', e.errno)"
                      % m.p("sub", "f"))
        assert out.startswith("errno ") or out == "opened"
        assert os.path.exists(fifo) and not os.path.isfile(fifo)
    finally:
        unblock(fifo)
    mounter.unmount(m)


def daemon_stopped(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "T"


@pytest.mark.parametrize("spin", SPINS)
def test_stuck_backing_request_blocks_no_other(mounter, monkeypatch, spin):
    """The backing directory of slow/ is the mount point of a second
    veilfs; stopping that daemon makes any backing syscall into slow/ wait
    for as long as it stays stopped."""
    set_spin(monkeypatch, spin)
    c = mounter.init()
    m = mounter.mount(c)
    before = set(os.listdir(c))
    os.mkdir(m.p("slow"))
    enc = new_entry(c, before)
    os.mkdir(m.p("other"))
    write_file(m.p("other", "g"), b"y")
    mounter.unmount(m)
    under = os.path.join(c, enc)
    with open(os.path.join(under, "gocryptfs.diriv"), "rb") as f:
        diriv = f.read()
    os.unlink(os.path.join(under, "gocryptfs.diriv"))
    # the second filesystem, mounted on slow/'s backing directory, shows
    # what slow/ held: its diriv
    inner_c = mounter.init()
    inner = mounter.mount(inner_c, mnt=under)
    write_file(os.path.join(under, "gocryptfs.diriv"), diriv, 0o444)
    outer = mounter.mount(c)
    stopped = False
    try:
        os.stat(outer.p("slow"))  # looked up while the inner one runs
        os.kill(inner.proc.pid, signal.SIGSTOP)
        stopped = True
        while not daemon_stopped(inner.proc.pid):
            time.sleep(0.01)
        ls = subprocess.Popen([sys.executable, "-c",
                               listing(outer.p("slow"))],
                              stdout=subprocess.PIPE)
        # the listing is now waiting for the stopped daemon, and stays so
        time.sleep(0.5)
        assert ls.poll() is None, "listing did not reach the backing fs"
        for _ in range(3):
            assert others_answered(outer).startswith("fresh ")
        assert ls.poll() is None
        os.kill(inner.proc.pid, signal.SIGCONT)
        stopped = False
        out, _ = ls.communicate(timeout=GUARD)
        assert out.decode().strip() == "[]"
    finally:
        if stopped:
            os.kill(inner.proc.pid, signal.SIGCONT)
    mounter.unmount(outer)
    mounter.unmount(inner)


DEPTH = 30000


def nest(cipherdir, enc1, enc2, depth):
    """Without the key: below the real sub/ (enc1) and sub/sub (enc2),
    repeat enc2 down to depth levels, each with sub/'s diriv, so that every
    level decrypts to another sub/."""
    with open(os.path.join(cipherdir, enc1, "gocryptfs.diriv"), "rb") as f:
        iv = f.read()
    fd = os.open(os.path.join(cipherdir, enc1, enc2), os.O_RDONLY)
    try:
        for level in range(2, depth + 1):
            w = os.open("gocryptfs.diriv",
                        os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o444,
                        dir_fd=fd)
            os.write(w, iv)
            os.close(w)
            if level == depth:
                break
            os.mkdir(enc2, dir_fd=fd)
            nfd = os.open(enc2, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
    finally:
        os.close(fd)


@pytest.mark.parametrize("depth", [
    3000, pytest.param(DEPTH, marks=long_stage, id="30000")])
def test_deep_tree_listed_and_removed(mounter, depth):
    """A 30,000-level tree (about 29,000 more levels than the daemon's
    directory-fd cache holds; the old recursive walk overflowed the 8 MiB
    stack at about 20,000) is listed with find -depth and removed with
    rm -rf; the daemon, with its default stack, survives both. 3,000
    levels (a few seconds) run in every stage, 30,000 (about two minutes)
    in the long one."""
    mounter.allow(900)
    c = mounter.init()
    m = mounter.mount(c)
    before = set(os.listdir(c))
    os.mkdir(m.p("sub"))
    enc1 = new_entry(c, before)
    inner = set(os.listdir(os.path.join(c, enc1)))
    os.mkdir(m.p("sub", "sub"))
    enc2 = new_entry(os.path.join(c, enc1), inner)
    mounter.unmount(m)
    try:
        nest(c, enc1, enc2, depth)
        deep_tree_checks(mounter, c, depth)
    finally:
        # shutil.rmtree (pytest's tmp_path clean-up) recurses per level
        subprocess.run(["rm", "-rf", os.path.join(c, enc1)])


def deep_tree_checks(mounter, c, depth):
    m = mounter.mount(c)
    p = subprocess.run(["find", "sub", "-depth", "-printf", "."],
                       cwd=m.mnt, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=600 * util.SLOW)
    assert m.running, "daemon died listing the deep tree:\n" + m.log()
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    assert len(p.stdout) == depth
    p = subprocess.run(["rm", "-rf", "sub"], cwd=m.mnt,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=600 * util.SLOW)
    assert m.running, "daemon died removing the deep tree:\n" + m.log()
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    assert os.listdir(m.mnt) == []
    assert sorted(os.listdir(c)) == ["gocryptfs.conf", "gocryptfs.diriv"]
    mounter.unmount(m)


def test_undecryptable_entries_log_one_line_per_listing(mounter):
    """5,000 entries with names that do not decrypt (and a long name
    without its .name file) in one directory: each listing hides them all
    and logs one line with the count, not one line per entry. (The kernel
    keeps a listing until the directory changes: a file created and removed
    between the listings makes each one reach the daemon.)"""
    c, enc = prepare(mounter)
    d = os.path.join(c, enc)
    for i in range(5000):
        os.close(os.open(os.path.join(d, "junk%05d" % i), os.O_CREAT, 0o600))
    sides = [n for n in os.listdir(d) if n.endswith(".name")]
    os.unlink(os.path.join(d, sides[0]))
    m = mounter.mount(c)
    for _ in range(3):
        assert sorted(os.listdir(m.p("sub"))) == ["f"]
        util.write_file(m.p("sub", "new"), b"")
        os.unlink(m.p("sub", "new"))
    lines = [ln for ln in m.log().splitlines() if "hiding" in ln]
    assert len(lines) == 3, lines[:5]
    assert all("hiding 5001 entries" in ln for ln in lines), lines
    mounter.unmount(m)


def test_device_nodes_never_opened(mounter):
    """A device node (here 1:3, /dev/null, whose open has no effect but
    is seen by inotify) in place of a directory's gocryptfs.diriv or of a
    long name's .name sidecar: the daemon refuses it without ever opening
    it -- a driver's open can act (allocate a terminal, rewind a tape, arm
    a watchdog) -- and the listing fails or hides the name as for any
    other bad file."""
    c, enc = prepare(mounter)
    sub = os.path.join(c, enc)
    diriv = os.path.join(sub, "gocryptfs.diriv")
    side = [os.path.join(sub, n) for n in os.listdir(sub)
            if n.endswith(".name")][0]
    with open(diriv, "rb") as f:
        iv = f.read()

    def check(node, want_listing):
        os.unlink(node)
        os.mknod(node, 0o444 | stat.S_IFCHR, os.makedev(1, 3))
        ifd = util.open_watch(node)
        try:
            m = mounter.mount(c)
            assert guarded(listing(m.p("sub"))) == want_listing
            assert not util.was_opened(ifd), "the daemon opened the device node"
            mounter.unmount(m)
        finally:
            os.close(ifd)

    check(diriv, "errno 5")
    os.unlink(diriv)
    write_file(diriv, iv, 0o444)
    check(side, "['f']")


def test_fifo_at_config_name_with_sharedstorage(mounter, tmp_path):
    """-sharedstorage probes the backing's locks on CIPHERDIR/gocryptfs.conf:
    with the config elsewhere (-config) and a FIFO in its place, the mount
    comes up without opening the FIFO (it waited for a writer forever)."""
    c = mounter.init()
    conf = str(tmp_path / "elsewhere.conf")
    os.rename(os.path.join(c, "gocryptfs.conf"), conf)
    fifo = os.path.join(c, "gocryptfs.conf")
    os.mkfifo(fifo)
    ifd = util.open_watch(fifo)
    try:
        m = mounter.mount(c, args=["-passfile", mounter.passfile,
                                   "-config", conf, "-sharedstorage"])
        write_file(m.p("f"), b"works")
        assert guarded(reading(m.p("f"))) == "works"
        assert not util.was_opened(ifd), "the daemon opened the FIFO"
        mounter.unmount(m)
    finally:
        os.close(ifd)
        unblock(fifo)


HOLDER = r"""
import fcntl, os, sys, time
fds = [os.open(p, os.O_RDONLY) for p in sys.argv[1:]]
for fd in fds:
    fcntl.lockf(fd, fcntl.LOCK_SH)
print("held", flush=True)
time.sleep(600)
"""


def test_outside_read_locks_hold_no_request_forever(mounter):
    """-sharedstorage locks byte ranges of the backing files, and anyone
    who may read the cipherdir can take read locks on them and keep them.
    Appends to 12 such files while the locks are held: the mount still
    answers everything else, and each append is done (without the lock,
    said in the log) while the other still holds on. All worker threads
    waited on those locks for good, and the whole mount hung."""
    c = mounter.init()
    m = mounter.mount(c, args=["-passfile", mounter.passfile,
                               "-sharedstorage"])
    names = ["f%d" % i for i in range(12)]
    before = set(os.listdir(c))
    for n in names:
        write_file(m.p(n), b"start ")
    backing = [os.path.join(c, e) for e in set(os.listdir(c)) - before]
    assert len(backing) == len(names)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER] + backing,
                              stdout=subprocess.PIPE)
    appends = []
    try:
        assert holder.stdout.readline() == b"held\n"
        for n in names:
            appends.append(subprocess.Popen(
                [sys.executable, "-c",
                 "open(%r, 'ab').write(b'appended')" % m.p(n)]))
        os.mkdir(m.p("other"))
        assert others_answered(m).startswith("fresh 1")
        for p in appends:
            try:
                assert p.wait(timeout=GUARD * 4) == 0
            except subprocess.TimeoutExpired:
                pytest.fail("an append waited for the outside lock")
        assert holder.poll() is None, "the lock holder went away"
        for n in names:
            assert guarded(reading(m.p(n))) == "start appended"
        assert "going on without it" in m.log()
    finally:
        holder.kill()
        holder.wait()
        for p in appends:
            p.kill()
            p.wait()
    mounter.unmount(m)


def test_device_node_in_place_of_a_file_never_opened(mounter):
    """A device node (1:3) put in place of a file's ciphertext after the
    kernel looked the name up, and one put where a file the kernel knows
    to be absent will be created: open and create fail with EIO, and the
    daemon never opens the node (it opened it read-write and refused it
    after an fstat; a driver's open can act)."""
    c = mounter.init()
    m = mounter.mount(c)
    before = set(os.listdir(c))
    write_file(m.p("looked-up"), b"x")
    (looked,) = set(os.listdir(c)) - before
    write_file(m.p("absent"), b"y")
    (absent,) = set(os.listdir(c)) - before - {looked}
    os.unlink(m.p("absent"))
    assert os.stat(m.p("looked-up")).st_size == 1
    assert not os.path.exists(m.p("absent"))  # the kernel keeps both
    for back in (looked, absent):
        path = os.path.join(c, back)
        if os.path.exists(path):
            os.unlink(path)
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    watches = [util.open_watch(os.path.join(c, b)) for b in (looked, absent)]
    try:
        code = ("import os\nfor p, f in ((%r, os.O_RDONLY), "
                "(%r, os.O_RDWR | os.O_CREAT)):\n"
                " try:\n  os.close(os.open(p, f, 0o644)); print('opened')\n"
                " except OSError as e:\n  print('errno', e.errno)"
                % (m.p("looked-up"), m.p("absent")))
        assert guarded(code).split("\n") == ["errno 5", "errno 5"]
        for w, b in zip(watches, (looked, absent)):
            assert not util.was_opened(w), "the daemon opened " + b
    finally:
        for w in watches:
            os.close(w)
    mounter.unmount(m)
