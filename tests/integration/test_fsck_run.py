# SPDX-License-Identifier: MIT
"""veilfs -fsck as a program: the experiments/fsck.out vector case, -q,
the progress line (on a terminal only), SIGINT ("fsck: aborted", 11, also
compared with gocryptfs), -repair-truncate, -quarantine, usage errors,
-repair interrupted by kill -9 or SIGINT at every step (the rerun repairs,
nothing is lost), large files cut into segments with holes, a
30,000-level tree under a small open-file limit, and hostile objects
(FIFOs, device nodes, symlinks where directories and sidecars were) that
must neither hang nor redirect the walk."""

import base64
import hashlib
import os
import re
import resource
import signal
import stat
import subprocess
import time

import pytest

import cli_util
import fsck_util as fu
import reliab_util as ru
import util
from conftest import require_fuse, require_gocryptfs
from test_fsck import (NONE, ONE, d_block, d_diriv_deleted, d_last_fragment,
                       d_no_sidecar, d_orphan_sidecar, d_rmdir_leftover,
                       d_symlink, d_xattr_value, read)
from test_reliability_tamper import mkname, vector_copy


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    """Base cipherdirs, built once per (creator, variant)."""
    require_fuse()
    require_gocryptfs()
    return fu.make_bases(tmp_path_factory, "fsck-run-bases")


def popen_fsck(cd, *extra, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.Popen(
        util.cmd_prefix(util.VEILFS_BIN) +
        [util.VEILFS_BIN, "-fsck", "-passfile", cd.passfile, *extra,
         cd.path], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=e)


def wait_for(stream, text, timeout):
    """Read stream (a pipe) until text appears; returns what was read."""
    buf = b""
    os.set_blocking(stream.fileno(), False)
    deadline = time.monotonic() + timeout * util.SLOW
    while text.encode() not in buf:
        if time.monotonic() > deadline:
            raise AssertionError("no %r in %r" % (text, buf))
        try:
            chunk = stream.read()
        except BlockingIOError:
            chunk = None
        if chunk:
            buf += chunk
        else:
            time.sleep(0.01)
    return buf


# --- the vector ----------------------------------------------------------------

def test_fsck_out_vector(vectors, gocryptfs, tmp_path):
    """experiments/fsck.out: a copy of vectors/gcm with one flipped bit
    in 4096.bin and an undecryptable name: 2 corrupt files, exit 26."""
    with open(os.path.join(vectors, "experiments", "fsck.out")) as f:
        ref = f.read()
    want_sum = fu.summary(ref)
    want_rc = int(re.search(r"^exit code (\d+)$", ref, re.M).group(1))
    cdir = str(tmp_path / "cipher")
    subprocess.run(["cp", "-a", os.path.join(vectors, "gcm", "cipher"), cdir],
                   check=True)
    pw = os.path.join(vectors, "gcm", "password.txt")
    # 4096.bin is Rm7NZy6y3XjD3ete5TJajw (vectors/gcm/vectors.txt)
    fu.flip(os.path.join(cdir, "Rm7NZy6y3XjD3ete5TJajw"), 18 + 16 + 100,
            0x01)
    util.write_file(os.path.join(cdir, "garbage_name"), b"garbage\n")
    v = fu.vfsck(cdir, pw)
    g = fu.gfsck(cdir, pw)
    assert fu.summary(v.out) == want_sum == fu.summary(g.out)
    assert v.returncode == want_rc == g.returncode == 26
    lines = fu.problems(v.out)
    assert 'fsck: entry in dir "/" (ciphertext "garbage_name"): name does ' \
           'not decrypt' in lines
    assert 'fsck: file "/4096.bin" (ciphertext "Rm7NZy6y3XjD3ete5TJajw"): ' \
           'corrupt block 0 of 1' in lines
    # the same with the master key instead of the config and password
    with open(os.path.join(vectors, "gcm", "masterkey.hex")) as f:
        key = f.read().strip()
    k = fu.run([util.VEILFS_BIN, "-fsck", "-masterkey", key, cdir])
    assert fu.summary(k.out) == want_sum and k.returncode == 26
    r = fu.vfsck(cdir, pw, "-repair")
    assert r.returncode == 0, r.out
    assert fu.summary(fu.vfsck(cdir, pw).out) == NONE
    assert fu.summary(fu.gfsck(cdir, pw).out) == NONE


# --- output ------------------------------------------------------------------

def test_quiet_prints_problems_and_summary(bases, tmp_path):
    cd = bases().copy(str(tmp_path / "c"))
    d_diriv_deleted(cd)
    os.truncate(cd.b("empty"), 18)  # a note: not shown with -q
    v = fu.vfsck(cd, "-q")
    assert v.returncode == 26
    assert v.out.splitlines() == [
        'fsck: dir "/sub" (ciphertext "%s"): gocryptfs.diriv is missing: no '
        'name in it can be decrypted' % cd.names["sub"], ONE]
    assert v.err == ""
    loud = fu.vfsck(cd)
    assert any(line.startswith("fsck: note: ") for line in
               loud.out.splitlines())
    assert "\r" not in loud.err  # no progress off a terminal


def test_progress_line_on_terminal_and_sigint(bases, tmp_path):
    """On a terminal: one progress line redrawn in place on stderr; SIGINT
    while it runs: "fsck: aborted", exit 11."""
    import pty
    import select
    cd = bases().copy(str(tmp_path / "c"))
    master, slave = pty.openpty()
    e = dict(os.environ, VEILFS_FSCK_TEST="pause=1")
    p = subprocess.Popen([util.VEILFS_BIN, "-fsck", "-passfile", cd.passfile,
                          cd.path], stdin=subprocess.DEVNULL, stdout=slave,
                         stderr=slave, env=e)
    os.close(slave)
    out = b""
    try:
        deadline = time.monotonic() + 30 * util.SLOW
        while not re.search(rb"\rfsck: \d+ dirs, \d+ files, .* so far",
                            out):
            assert time.monotonic() < deadline, out
            r, _, _ = select.select([master], [], [], 0.1)
            if r:
                out += os.read(master, 4096)
        p.send_signal(signal.SIGINT)
        rc = p.wait(timeout=30 * util.SLOW)
        out += cli_util.pty_drain(master, 0.2)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)
    assert rc == 11, out
    assert b"fsck: aborted" in out
    assert b"fsck summary" not in out


def test_sigint_aborts_like_gocryptfs(bases, tmp_path):
    cd = bases().copy(str(tmp_path / "c"))
    p = popen_fsck(cd, env={"VEILFS_FSCK_TEST": "pause=2"})
    try:
        wait_for(p.stderr, "fsck: test pause", 60)
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=60 * util.SLOW)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 11
    assert out.decode().splitlines()[-1] == "fsck: aborted"
    # gocryptfs on a tree large enough to be stopped while it reads: a
    # file of all-zero blocks (valid holes, but stored), larger (and the
    # signal later) while gocryptfs finishes first or is not ready for it
    g = cd.copy(str(tmp_path / "g"))
    hdr = read(g.b("big.bin"))[:18]
    z = bytes(fu.CBS["gcm"] * 256)
    seen = []
    for mib, delay in ((256, 0.3), (1024, 0.3), (1024, 1.0), (2048, 1.0)):
        with open(g.b("big.bin"), "wb") as f:
            f.write(hdr)
            for _ in range(mib * 1024 * 1024 // len(z)):
                f.write(z)
        gp = subprocess.Popen([util.GOCRYPTFS_BIN, "-fsck", "-passfile",
                               g.passfile, g.path], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
        try:
            wait_for(gp.stdout, "Decrypting master key", 60)
            time.sleep(delay)
            gp.send_signal(signal.SIGINT)
            gout, _ = gp.communicate(timeout=300)
        finally:
            if gp.poll() is None:
                gp.kill()
                gp.wait()
        seen.append(gp.returncode)
        if gp.returncode == 11:
            break
    assert gp.returncode == 11, seen
    assert b"fsck: aborted" in gout


# --- repair options --------------------------------------------------------------

def test_repair_truncate(bases, tmp_path, mounter):
    cd = bases().copy(str(tmp_path / "c"))
    d_block(cd)  # big.bin: block 1 of 5
    fu.flip(cd.b("multi.bin"), fu.block_off(cd, 0))  # multi.bin: block 0
    fu.flip(cd.b("sub/f2"), 9, 0x01)  # a header bit: restored, not cut
    r = fu.vfsck(cd, "-repair-truncate")
    assert r.returncode == 0, r.out
    assert fu.summary(fu.vfsck(cd).out) == NONE
    m = mounter.mount(cd.path, args=["-passfile", cd.passfile])
    with open(m.p("big.bin"), "rb") as f:
        assert f.read() == cd.plain["big.bin"][:4096]
    assert os.path.getsize(m.p("multi.bin")) == 0
    with open(m.p("sub/f2"), "rb") as f:
        assert f.read() == cd.plain["sub/f2"]


def test_quarantine_dir_option(bases, tmp_path):
    cd = bases().copy(str(tmp_path / "c"))
    d_block(cd)
    link = str(tmp_path / "link-to-c")
    os.symlink(cd.path, link)
    before = sorted(os.listdir(cd.path))
    # below it, the cipherdir itself, a symlink to it
    for inside in (os.path.join(cd.path, "q"), cd.path, link):
        v = fu.vfsck(cd, "-repair", "-quarantine", inside)
        assert v.returncode == 11 and "inside CIPHERDIR" in v.err, v.err
        assert fu.summary(fu.vfsck(cd).out) == ONE  # nothing was changed
        assert sorted(os.listdir(cd.path)) == before
    qtop = str(tmp_path / "myq")
    r = fu.vfsck(cd, "-repair", "-quarantine", qtop)
    assert r.returncode == 0, r.out + r.err
    q = fu.quarantine_of(r.out)
    assert os.path.dirname(q) == qtop
    with open(os.path.join(q, "report.txt")) as f:
        report = f.read()
    assert "big.bin" in report and "0001-" in report
    # a second repair of a clean tree makes no quarantine at all
    r2 = fu.vfsck(cd, "-repair")
    assert r2.returncode == 0 and "repair summary" not in r2.out
    assert os.listdir(qtop) == [os.path.basename(q)]


@pytest.mark.parametrize("args,code,msg", [
    (["-quarantine", "/tmp/x"], 1, "-quarantine needs -repair"),
    (["-reverse"], 1, "not supported with -reverse"),
])
def test_usage_errors(bases, tmp_path, args, code, msg):
    cd = bases()
    v = fu.vfsck(cd, *args)
    assert v.returncode == code and msg in v.err, v.err


@pytest.mark.parametrize("flag", [["-repair"], ["-repair-truncate"],
                                  ["-quarantine", "/tmp/x"]])
def test_repair_flags_without_fsck(bases, tmp_path, flag):
    """-repair and its options without -fsck are a usage error, not a
    mount (it once mounted and ignored them)."""
    cd = bases()
    mnt = str(tmp_path / "m")
    os.mkdir(mnt)
    v = fu.run([util.VEILFS_BIN, *flag, "-passfile", cd.passfile, cd.path,
                mnt])
    assert v.returncode == 1, v.err
    assert "%s needs -fsck" % flag[0] in v.err, v.err
    assert not os.path.ismount(mnt)


def test_errors_before_the_walk(bases, tmp_path):
    cd = bases()
    v = fu.run([util.VEILFS_BIN, "-fsck", "-passfile", cd.passfile,
                str(tmp_path / "nope")])
    assert v.returncode == 6
    bad = util.write_passfile(str(tmp_path / "bad"), "wrong")
    v = fu.run([util.VEILFS_BIN, "-fsck", "-passfile", bad, cd.path])
    assert v.returncode == 12 and "Password incorrect" in v.err
    g = fu.run([util.GOCRYPTFS_BIN, "-fsck", "-passfile", bad, cd.path])
    assert g.returncode == 12


# --- interrupted repairs ---------------------------------------------------------

COMBINED = (d_block, d_last_fragment, d_orphan_sidecar, d_no_sidecar,
            d_diriv_deleted, d_rmdir_leftover, d_symlink, d_xattr_value)


def combined(base, dst):
    cd = base.copy(dst)
    fixes, saved = [], {}
    for dmg in COMBINED:
        d = dmg(cd)
        if "fix" in d:
            fixes.append(d["fix"])
        for p in d.get("saved", []):
            saved[p[len(cd.path):]] = read(p)
    want = fu.expected(cd)
    for f in fixes:
        f(want)
    return cd, want, saved


def all_quarantined(cd):
    top = cd.path + ".veilfs-quarantine"
    kept = []
    for run in os.listdir(top):
        kept += fu.quarantine_files(os.path.join(top, run)).values()
    return kept


def veilfs_tree(mounter, cd):
    m = mounter.mount(cd.path, args=["-passfile", cd.passfile])
    t = fu.read_tree(m.mnt)
    t["xattrs"] = {}
    for rel, name, _ in fu.XATTRS:
        try:
            t["xattrs"][rel] = os.getxattr(m.p(rel), name)
        except OSError:
            t["xattrs"][rel] = None
    mounter.unmount(m)
    return t


@pytest.mark.parametrize("how", ["kill", "int"])
def test_repair_interrupted_at_every_step(bases, tmp_path, mounter, how):
    """kill -9 (or SIGINT) before each state-changing step of -repair:
    the rerun repairs the rest, the result equals an uninterrupted repair
    and every original is in a quarantine."""
    base = bases()
    ref, want, _ = combined(base, str(tmp_path / "ref"))
    r = fu.vfsck(ref, "-repair")
    assert r.returncode == 0, r.out
    assert fu.canonical(veilfs_tree(mounter, ref)) == fu.canonical(want)
    steps = 0
    n = 1
    while True:
        cd, _, saved = combined(base, str(tmp_path / ("s%d" % n)))
        p = fu.vfsck(cd, "-repair",
                     env={"VEILFS_FSCK_TEST": "%s=%d" % (how, n)})
        if p.returncode == 0:
            break  # fewer steps than n: done
        steps += 1
        if how == "kill":
            assert p.returncode == -signal.SIGKILL, p.out + p.err
        else:
            assert p.returncode == 11, p.out + p.err
            assert p.out.splitlines()[-2:][-1].startswith("fsck: ") and \
                "fsck: aborted" in p.out
        again = fu.vfsck(cd, "-repair")
        assert again.returncode == 0, "after step %d:\n%s%s" % (
            n, again.out, again.err)
        check = fu.vfsck(cd)
        assert fu.summary(check.out) == NONE, "after step %d:\n%s" % (
            n, check.out)
        assert fu.canonical(veilfs_tree(mounter, cd)) == \
            fu.canonical(want), "after step %d" % n
        kept = all_quarantined(cd)
        for path, data in saved.items():
            assert data in kept, "after step %d: %s lost" % (n, path)
        subprocess.run(["rm", "-rf", cd.path, cd.path +
                        ".veilfs-quarantine"], check=True)
        n += 1
        if how == "int":
            n += 2  # every third step is enough for SIGINT
    # the combined damage takes over 20 steps to repair
    assert steps >= (20 if how == "kill" else 7), "only %d steps" % steps


def test_parked_names_that_decrypt_to_garbage(tmp_path, mounter):
    """What a run killed after it parked entries and wrote a made-up IV
    leaves: parked names that now decrypt, to garbage, under the current
    IV (1 in 256 of them pass the padding check). The rerun gives them
    recovery names, as the killed run meant to, and keeps the sidecar of a
    long one until the entry has its new name."""
    cdir, pw, mk = vector_copy(tmp_path)
    div = os.path.join(cdir, "gocryptfs.diriv")
    park = "gocryptfs.veilfs-parked."
    want = {}
    for plain, junk in (("hello.txt", bytes([0x5a, 0xb2, 0x8e, 0x98]) * 3),
                        ("5000.bin", b"\xff" * 200)):
        want[plain] = read(os.path.join(ru.VECTORS, "gcm", "plain", plain))
        cname = mkname(mk, div, junk)
        stored = cname
        if len(cname) > 255:
            stored = "gocryptfs.longname." + base64.urlsafe_b64encode(
                hashlib.sha256(cname.encode()).digest()).decode().rstrip("=")
            with open(os.path.join(cdir, stored + ".name"), "w") as f:
                f.write(cname)
        os.rename(os.path.join(cdir, mkname(mk, div, plain.encode())),
                  os.path.join(cdir, park + stored))
    cd = fu.Cipherdir(cdir, "gcm", "gocryptfs", {}, {}, pw)
    r = fu.vfsck(cd, "-repair")
    assert r.returncode == 0, r.out + r.err
    assert fu.summary(fu.vfsck(cd).out) == NONE
    m = mounter.mount(cdir, args=["-passfile", pw])
    names = set(os.listdir(m.p("")))
    assert not names & set(want), names
    got = sorted(read(m.p(n)) for n in names if n.startswith("recovered-"))
    assert got == sorted(want.values())
    mounter.unmount(m)


# --- large files ---------------------------------------------------------------

def test_segments_and_holes(mounter, tmp_path):
    """A file cut into segments (here of 16 blocks) that checkers take in
    parallel, with holes that are skipped: exactly the bad blocks are
    reported and repaired."""
    cdir = mounter.init(["-gcm"])
    m = mounter.mount(cdir)
    size = 600 * 4096 + 123
    data = bytearray(util.rand_bytes(size, 11))
    with open(m.p("big"), "wb") as f:
        f.write(data[:100 * 4096])
        f.seek(300 * 4096)  # blocks 100..299: a hole
        f.write(data[300 * 4096:])
    data[100 * 4096:300 * 4096] = bytes(200 * 4096)
    mounter.unmount(m)
    back = util.only_backing_file(cdir)
    st = os.stat(back)
    assert st.st_blocks * 512 < st.st_size - 100 * 4096  # really sparse
    bad = [3, 16, 17, 40, 99, 350, 599, 600]
    cd = fu.Cipherdir(cdir, "gcm", util.VEILFS_BIN, {}, {}, mounter.passfile)
    for b in bad:
        fu.flip(back, fu.block_off(cd, b, 5))
    v = fu.vfsck(cd, env={"VEILFS_FSCK_TEST": "seg=16"})
    assert v.returncode == 26
    assert fu.problems(v.out) == [
        'fsck: file "/big" (ciphertext "%s"): corrupt blocks 3, 16-17, 40, '
        '99, 350, 599-600 of 601' % os.path.basename(back)]
    r = fu.vfsck(cd, "-repair", env={"VEILFS_FSCK_TEST": "seg=16"})
    assert r.returncode == 0, r.out
    assert fu.summary(fu.vfsck(cd).out) == NONE
    for b in bad:
        data[4096 * b:4096 * (b + 1)] = bytes(len(data[4096 * b:
                                                       4096 * (b + 1)]))
    m = mounter.mount(cdir)
    with open(m.p("big"), "rb") as f:
        assert f.read() == bytes(data)


# --- hostile trees -----------------------------------------------------------------

DEPTH = 30000


def test_deep_tree_bounded_fds(mounter, tmp_path):
    """30,000 nested directories under an open-file limit of 256: checked
    (and a damaged file at the bottom found and repaired) without running
    out of fds or stack. On a tmpfs: deleting such a tree from a disk
    takes long."""
    with util.tmpfs(tmp_path, "400m") as t:
        deep_tree(mounter, os.path.join(t, "cipher"))


def deep_tree(mounter, cdir):
    mounter.init(["-gcm"], cipherdir=cdir)
    m = mounter.mount(cdir)
    os.mkdir(m.p("d"))
    os.mkdir(m.p("d", "d"))
    util.write_file(m.p("d", "f"), b"at the bottom\n")
    mounter.unmount(m)
    a = [n for n in util.backing_entries(cdir)][0]
    inner = [n for n in os.listdir(os.path.join(cdir, a))
             if n != "gocryptfs.diriv"]
    fname = [n for n in inner if os.path.isfile(os.path.join(cdir, a, n))][0]
    dname = [n for n in inner if n != fname][0]
    with open(os.path.join(cdir, a, "gocryptfs.diriv"), "rb") as f:
        iv = f.read()
    with open(os.path.join(cdir, a, fname), "rb") as f:
        fdata = f.read()
    os.unlink(os.path.join(cdir, a, fname))
    # every level below a uses a's IV, so the name "d" is the same
    div = os.path.join(cdir, a, dname, "gocryptfs.diriv")
    os.chmod(div, 0o644)
    with open(div, "wb") as f:
        f.write(iv)
    fd = os.open(os.path.join(cdir, a, dname), os.O_RDONLY)
    try:
        for _ in range(DEPTH):
            os.mkdir(dname, dir_fd=fd)
            nfd = os.open(dname, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
            w = os.open("gocryptfs.diriv", os.O_WRONLY | os.O_CREAT, 0o444,
                        dir_fd=fd)
            os.write(w, iv)
            os.close(w)
        w = os.open(fname, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(w, fdata[:40] + bytes([fdata[40] ^ 1]) + fdata[41:])
        os.close(w)
    finally:
        os.close(fd)
    cd = fu.Cipherdir(cdir, "gcm", util.VEILFS_BIN, {}, {}, mounter.passfile)

    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    v = fu.vfsck(cd, preexec_fn=limit, timeout=300)
    assert v.returncode == 26, v.out[-2000:] + v.err[-2000:]
    lines = fu.problems(v.out)
    assert len(lines) == 1 and lines[0].startswith(
        'fsck: file "/d' + "/d" * (DEPTH + 1) + '/f" (ciphertext "')
    assert lines[0].endswith("): corrupt block 0 of 1")
    r = fu.vfsck(cd, "-repair", preexec_fn=limit, timeout=300)
    assert r.returncode == 0, r.out[-2000:] + r.err[-2000:]
    v = fu.vfsck(cd, preexec_fn=limit, timeout=300)
    assert fu.summary(v.out) == NONE and v.returncode == 0


@pytest.mark.parametrize("side_kind", ["fifo", "chardev"])
def test_hostile_objects(mounter, tmp_path, side_kind):
    """FIFOs and device nodes (with valid names, and where a diriv and a
    .name file should be) and a symlink where a directory was: the check
    neither hangs nor follows anything, and -repair copes. A device node
    as the .name file is never opened (a driver's open can act): -repair
    keeps the same node in the quarantine as its copy."""
    cdir = mounter.init(["-gcm"])
    m = mounter.mount(cdir)
    os.mkfifo(m.p("fifo"))
    os.mknod(m.p("null"), 0o600 | 0o020000, os.makedev(1, 3))
    os.mkdir(m.p("sub"))
    util.write_file(m.p("sub", "x"), b"x\n")
    os.mkdir(m.p("dir"))
    util.write_file(m.p("dir", "inner"), b"inner\n")
    util.write_file(m.p("L" * 200), b"long\n")
    mounter.unmount(m)
    names = {}
    for n in util.backing_entries(cdir):
        p = os.path.join(cdir, n)
        if n.endswith(".name"):
            names["side"] = n
        elif n.startswith("gocryptfs.longname."):
            names["long"] = n
        elif os.path.isdir(p):
            names.setdefault("dirs", []).append(n)
    def holds_x(d):
        # sub holds "x\n": 18 + 2 + 32 bytes of ciphertext
        return any(os.path.getsize(os.path.join(cdir, d, n)) == 52
                   for n in os.listdir(os.path.join(cdir, d))
                   if n != "gocryptfs.diriv")
    sub = [d for d in names["dirs"] if holds_x(d)][0]
    # sub's diriv is a FIFO, the long name's sidecar is a FIFO, and one
    # directory is a symlink to / now
    os.unlink(os.path.join(cdir, sub, "gocryptfs.diriv"))
    os.mkfifo(os.path.join(cdir, sub, "gocryptfs.diriv"))
    side = os.path.join(cdir, names["side"])
    os.unlink(side)
    if side_kind == "fifo":
        os.mkfifo(side)
    else:
        os.mknod(side, 0o444 | stat.S_IFCHR, os.makedev(1, 3))
    watch = util.open_watch(side)
    other = [d for d in names["dirs"] if d != sub][0]
    subprocess.run(["rm", "-rf", os.path.join(cdir, other)], check=True)
    os.symlink("/", os.path.join(cdir, other))
    cd = fu.Cipherdir(cdir, "gcm", util.VEILFS_BIN, {}, {}, mounter.passfile)
    v = fu.vfsck(cd, timeout=60)
    assert v.returncode == 26
    out = "\n".join(fu.problems(v.out))
    assert "gocryptfs.diriv is not a regular file" in out
    assert "its .name file is not a regular file" in out
    assert 'symlink "/dir"' in out and "target does not decrypt" in out
    assert "/etc" not in v.out and "/proc" not in v.out
    assert fu.summary(v.out) == "fsck summary: 3 corrupt files, 0 files " \
                                "skipped"
    r = fu.vfsck(cd, "-repair", timeout=60)
    assert r.returncode == 0, r.out + r.err
    try:
        assert not util.was_opened(watch), "the .name node was opened"
    finally:
        os.close(watch)
    v = fu.vfsck(cd, timeout=60)
    assert fu.summary(v.out) == NONE, v.out
    m = mounter.mount(cdir)
    got = sorted(os.listdir(m.mnt))
    assert "fifo" in got and "null" in got and "sub" in got
    assert any(n.startswith("recovered-") for n in got)  # the long name
    assert os.listdir(m.p("sub")) == ["recovered-0001"]
    with open(m.p("sub", "recovered-0001"), "rb") as f:
        assert f.read() == b"x\n"


@pytest.mark.parametrize("binary", ["veilfs", "gocryptfs"])
def test_repair_refused_while_mounted(bases, tmp_path, mounter, binary):
    cd = bases().copy(str(tmp_path / "c"))
    d_block(cd)
    m = mounter.mount(cd.path, args=["-passfile", cd.passfile],
                      binary=util.VEILFS_BIN if binary == "veilfs" else
                      util.GOCRYPTFS_BIN)
    r = fu.vfsck(cd, "-repair")
    assert r.returncode == 11 and "unmount it before -repair" in r.err
    v = fu.vfsck(cd)
    assert v.returncode == 26 and "is mounted on" in v.err
    mounter.unmount(m)
    assert fu.vfsck(cd, "-repair").returncode == 0


def test_repair_refused_while_mounted_under_another_name(bases, tmp_path,
                                                       mounter):
    """A cipherdir mounted with -fsname shows another source in mountinfo:
    the daemon's flock on it still tells -repair (which rewrote IVs and
    renamed entries under the live mount)."""
    cd = bases().copy(str(tmp_path / "c"))
    d_block(cd)
    m = mounter.mount(cd.path, args=["-passfile", cd.passfile,
                                     "-fsname", "elsewhere"])
    r = fu.vfsck(cd, "-repair")
    assert r.returncode == 11 and "unmount it before -repair" in r.err
    mounter.unmount(m)
    assert fu.vfsck(cd, "-repair").returncode == 0


def _unlistable(tmp_path, name):
    """A new -plaintextnames cipherdir, its password file, and the
    environment under which veilfs cannot list a directory called NAME
    (tests/tools/faultshim: EIO)."""
    pw = str(tmp_path / "pw")
    with open(pw, "w") as f:
        f.write("test\n")
    cdir = str(tmp_path / "c")
    os.mkdir(cdir)
    util.run_init(util.VEILFS_BIN, cdir, pw, ["-plaintextnames", "-gcm"],
                  log=str(tmp_path / "init.log"))
    env = dict(os.environ, LD_PRELOAD=ru.tool("faultshim.so"),
               VEILFS_FAULT_GETDENTS=name)
    if os.environ.get("VEILFS_SANITIZED"):
        env["ASAN_OPTIONS"] = (os.environ.get("ASAN_OPTIONS", "") +
                               ":verify_asan_link_order=0")
    return cdir, pw, env


def test_a_deep_directory_that_cannot_be_listed(tmp_path):
    """A directory 64 levels down (where the walker's stack of open
    directories grows) whose listing fails with EIO (made by
    tests/tools/faultshim) is reported with its path and the walk goes on
    (it once read freed memory there: a crash under ASan)."""
    cdir, pw, env = _unlistable(tmp_path, "BAD")
    d = cdir
    for _ in range(63):
        d = os.path.join(d, "d")
        os.mkdir(d)
    os.mkdir(os.path.join(d, "BAD"))
    r = fu.vfsck(cdir, pw, env=env)
    out = (r.stdout + r.stderr).decode(errors="replace")
    assert "faultshim: getdents64" in out, out
    assert "/d" * 63 + '/BAD"' in out, out
    assert "Input/output error" in out, out
    assert r.returncode == 26, out
    assert "Sanitizer" not in out, out


def _userns(*how):
    """unshare HOW... as a command prefix, or skip where user namespaces
    (or FUSE in them) are not available."""
    p = subprocess.run(["unshare", *how, "true"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    if p.returncode:
        pytest.skip("no user namespaces here (unshare %s)" % " ".join(how))
    return ["unshare", *how]


def test_objects_that_cannot_be_opened(bases, tmp_path):
    """A directory and files that cannot be opened (owned by a user the
    namespace does not map, mode 000: EACCES even for root there), one of
    them with an xattr that cannot be read either: gocryptfs counts each
    as corrupt when it runs as root and as skipped otherwise (a hard link
    once); so does veilfs."""
    cd = bases("veilfs", "gcm").copy(str(tmp_path / "cipher"))
    # a.txt (and hard.txt, the same inode) has an xattr: 2 problems
    for rel in ("big.bin", "a.txt", "sub/deeper"):
        os.chown(cd.b(rel), 12345, 12345)
        os.chmod(cd.b(rel), 0)

    def vf(prefix):
        return fu.run(prefix + util.cmd_prefix(util.VEILFS_BIN) +
                      [util.VEILFS_BIN, "-fsck", "-passfile", cd.passfile,
                       cd.path])

    root = _userns("-Urm")
    want = "fsck summary: 4 corrupt files, 0 files skipped"
    g = fu.run(root + [util.GOCRYPTFS_BIN, "-fsck", "-passfile",
                       cd.passfile, cd.path])
    v = vf(root)
    assert fu.summary(g.out) == want and g.returncode == 26, g.out + g.err
    assert fu.summary(v.out) == want and v.returncode == 26, v.out
    for pat in (r'^fsck: dir "/sub/deeper" .*: cannot open: Permission '
                r'denied$', r'^fsck: file "/big\.bin" .*: cannot open: ',
                r'^fsck: file "/(a|hard)\.txt" .*: xattr "user\.foo" '
                r'cannot be read: Permission denied$'):
        assert re.search(pat, v.out, re.M), v.out
    # not root: skipped (gocryptfs cannot mount FUSE as an unmapped user
    # here, so it is not run)
    v = vf(_userns("--map-user=4242", "--map-group=4242"))
    assert fu.summary(v.out) == ("fsck summary: 0 corrupt files, 4 files "
                                 "skipped"), v.out
    assert v.returncode == 26


def test_a_directory_that_cannot_be_listed_is_corrupt(tmp_path):
    """getdents64 failing with EIO (tests/tools/faultshim) on a directory:
    a corrupt directory, as gocryptfs counts a directory it cannot list
    (gocryptfs does not load the shim: test_objects_that_cannot_be_opened
    compares with it); -repair leaves it, says so and exits 26."""
    cdir, pw, env = _unlistable(tmp_path, "BAD")
    os.makedirs(os.path.join(cdir, "a", "BAD"))
    os.mkdir(os.path.join(cdir, "b"))
    v = fu.vfsck(cdir, pw, env=env)
    assert fu.summary(v.out) == ONE and v.returncode == 26, v.out + v.err
    assert re.search(r'^fsck: dir "/a/BAD" \(ciphertext "a/BAD"\): cannot '
                     r'list: Input/output error$', v.out, re.M), v.out
    r = fu.vfsck(cdir, pw, "-repair", env=env)
    assert re.search(r'^fsck: not repaired: dir "/a/BAD" .*: it cannot be '
                     r'read$', r.out, re.M), r.out
    assert "repair summary: 0 of 1 problems repaired" in r.out, r.out
    assert r.returncode == 26
