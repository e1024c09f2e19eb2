# SPDX-License-Identifier: MIT
"""Reverse mode (-reverse, spec §5) against the real gocryptfs 2.3 -reverse.

Both mount the same plaintext directory with the same config, and their
views are compared byte for byte: names (EME, deterministic, plaintext,
long names with their .name files), the virtual gocryptfs.diriv files and
gocryptfs.conf, every file's content (header and blocks), symlink targets,
and the attributes of real and virtual entries (mode, links, owner, size,
blocks, mtime, ctime, inode number). Copies of the view made with cp -a and
rsync -a mount in forward mode under veilfs and under gocryptfs and give the
plaintext back. The vectors' views regenerate; exclusion, live changes,
hard links, -one-file-system, holes, EROFS and bad input are checked too.
"""

import errno
import fnmatch
import hashlib
import os
import shutil
import stat
import subprocess
import time

import pytest

import compat_tree
import util
from util import expect_errno, read_file, write_file

# Flags of -init -reverse per variant (veilfs and gocryptfs take the same).
VARIANTS = {
    "default": [],
    "plaintextnames": ["-plaintextnames"],
    "deterministic-names": ["-deterministic-names"],
    "longnamemax62": ["-longnamemax", "62"],
}
CONF = ".gocryptfs.reverse.conf"
# Longer than the 1 s attribute and entry timeouts of both programs.
SETTLE = 2.5


def populate(root):
    """A plaintext tree with every kind of entry the view shows: the tree of
    the forward compatibility tests (compat_tree) without its xattrs (the
    view of gocryptfs 2.3 has none), and more."""
    def j(*a):
        return os.path.join(root, *a)

    compat_tree.populate(root)
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            for x in os.listxattr(p, follow_symlinks=False):
                os.removexattr(p, x, follow_symlinks=False)
    for n in (15, 16, 8191, 8193):
        write_file(j("size%d.bin" % n), util.rand_bytes(n, n))
    write_file(j("big20m.bin"), util.rand_bytes(20 << 20, 20))
    with open(j("allhole.bin"), "wb") as f:
        f.truncate(10001)
    for n in (62, 63):
        write_file(j("n" * n), b"name of %d bytes" % n)
    # names the view itself uses, as plaintext names in a subdirectory
    write_file(j("sub", "gocryptfs.diriv"), b"not an IV")
    write_file(j("sub", "gocryptfs.conf"), b"not a config")
    write_file(j("sub", "gocryptfs.longname.abc"), b"not a long name")
    os.link(j("hl1"), j("hl3"))


def view_snapshot(root, refused=None):
    """{relpath: attributes and content} of every entry below ROOT, walked
    in sorted order (the order decides which hard link is opened first).
    With a list REFUSED, entries that are listed but refused with EPERM are
    appended to it instead of failing the walk."""
    snap = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            p = os.path.join(dirpath, name)
            try:
                st = os.lstat(p)
            except PermissionError:
                if refused is None:
                    raise
                refused.append(os.path.relpath(p, root))
                continue
            data = None
            if stat.S_ISLNK(st.st_mode):
                data = os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                data = hashlib.sha256(read_file(p)).hexdigest()
            snap[os.path.relpath(p, root)] = (
                st.st_mode, st.st_nlink, st.st_uid, st.st_gid, st.st_size,
                st.st_blocks, st.st_mtime_ns, st.st_ctime_ns, st.st_ino,
                data)
    return snap


def _links_agree(snap):
    """A file with several links shows the same bytes through each, and
    which path decided them (spec §5.4: the first one opened) depends on
    what the kernel cached; take the content out of the comparison."""
    by_ino = {}
    for k, v in snap.items():
        if stat.S_ISREG(v[0]) and v[1] > 1:
            by_ino.setdefault(v[8], set()).add(v[9])
            snap[k] = v[:9] + ("(hard link)",)
    assert all(len(h) == 1 for h in by_ino.values()), by_ino
    return snap


def assert_same_views(got, want, what):
    diff = util.diff_snapshots(_links_agree(dict(got)),
                               _links_agree(dict(want)))
    assert not diff, "%s:\n  %s" % (what, "\n  ".join(diff[:30]))


def _init_reverse(mounter, plain, flags, binary=None):
    os.makedirs(plain, exist_ok=True)
    return mounter.init(["-reverse", *flags], binary=binary, cipherdir=plain)


def _rmount(mounter, plain, binary=None, extra=()):
    return mounter.mount(plain, binary=binary,
                         args=["-reverse", *extra, "-passfile",
                               mounter.passfile])


def plain_snapshot(plain):
    snap = util.snapshot(plain)
    snap.pop(CONF, None)
    return snap


def check_copy_mounts(mounter, gocryptfs, copy, want):
    """A copy of the view mounts in forward mode under both programs and
    shows the plaintext tree."""
    for binary in (util.VEILFS_BIN, gocryptfs):
        m = mounter.mount(copy, binary=binary,
                          args=["-ro", "-passfile", mounter.passfile])
        diff = util.diff_snapshots(util.snapshot(m.mnt), want)
        assert not diff, "forward mount of %s by %s:\n  %s" % (
            copy, os.path.basename(binary), "\n  ".join(diff[:30]))
        mounter.unmount(m)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_view_same_as_gocryptfs(mounter, gocryptfs, tmp_path, variant):
    plain = str(tmp_path / "plain")
    # the config made by each program in turn: both read either
    maker = gocryptfs if variant in ("plaintextnames",
                                     "longnamemax62") else None
    _init_reverse(mounter, plain, VARIANTS[variant], binary=maker)
    populate(plain)
    want = plain_snapshot(plain)
    v = _rmount(mounter, plain)
    g = _rmount(mounter, plain, binary=gocryptfs)
    got = view_snapshot(v.mnt)
    assert_same_views(got, view_snapshot(g.mnt),
                      "veilfs -reverse and gocryptfs -reverse differ")
    # the view has what the variant implies
    names = os.listdir(v.mnt)
    assert "gocryptfs.conf" in names and CONF not in names
    assert ("gocryptfs.diriv" in names) == (variant in ("default",
                                                        "longnamemax62"))
    assert any(n.endswith(".name") for n in names) == (
        variant != "plaintextnames")
    if variant == "longnamemax62":
        assert all(len(n) <= 62 or n.endswith(".name") for n in names)
    # copies of the view give the plaintext back under both programs
    cp = str(tmp_path / "copy-cp")
    rs = str(tmp_path / "copy-rsync")
    subprocess.run(["cp", "-a", v.mnt, cp], check=True)
    subprocess.run(["rsync", "-a", v.mnt + "/", rs + "/"], check=True)
    mounter.unmount(v)
    mounter.unmount(g)
    for copy in (cp, rs):
        check_copy_mounts(mounter, gocryptfs, copy, want)
    # the same view again after a remount (deterministic)
    v = _rmount(mounter, plain)
    assert_same_views(view_snapshot(v.mnt), got, "a second mount differs")


def _vector_copy(vectors, name, dst):
    src = os.path.join(vectors, name, "plain")
    shutil.copytree(src, dst, symlinks=True, copy_function=shutil.copy2)
    return dst


def _tree(root):
    """Names, types, modes, sizes, contents and targets (no times)."""
    out = {}
    for k, v in view_snapshot(root).items():
        out[k] = (stat.S_IFMT(v[0]), stat.S_IMODE(v[0]), v[4], v[9])
    return out


@pytest.mark.parametrize("name", ["reverse", "reverse-plaintextnames"])
def test_vector_views_regenerate(mounter, vectors, tmp_path, name):
    """gocryptfs 2.3 made cipher/ from plain/: the same bytes again."""
    plain = _vector_copy(vectors, name, str(tmp_path / "plain"))
    pw = os.path.join(vectors, name, "password.txt")
    m = mounter.mount(plain, args=["-reverse", "-passfile", pw])
    got = _tree(m.mnt)
    want = _tree(os.path.join(vectors, name, "cipher"))
    assert got == want, util.diff_snapshots(got, want)
    mounter.unmount(m)
    # -masterkey (with -reverse implying AES-SIV) gives the same view
    key = read_file(os.path.join(vectors, name, "masterkey.hex")).strip()
    flags = ["-plaintextnames", "-raw64=false"] if "plaintext" in name else []
    m = mounter.mount(plain, args=["-reverse", "-masterkey", key.decode(),
                                   *flags])
    got = _tree(m.mnt)
    assert got == want, util.diff_snapshots(got, want)


def _ls_names(listing):
    """Names and sizes from the vector's `ls -l` of the root."""
    out = {}
    for line in listing.splitlines():
        f = line.split()
        if len(f) < 9 or f[0] == "total":
            continue
        name = line.split(None, 8)[8].split(" -> ")[0]
        out[name] = int(f[4])
    return out


@pytest.mark.parametrize("name", ["reverse", "reverse-plaintextnames"])
def test_vector_exclude(mounter, vectors, tmp_path, name):
    plain = _vector_copy(vectors, name, str(tmp_path / "plain"))
    pw = os.path.join(vectors, name, "password.txt")
    with open(os.path.join(vectors, name, "reverse_view_with_exclude_"
                           "hello.txt_and_wildcard_bin.txt")) as f:
        want = _ls_names(f.read())
    m = mounter.mount(plain, args=["-reverse", "-exclude", "hello.txt",
                                   "-exclude-wildcard", "*.bin",
                                   "-passfile", pw])
    got = {n: os.lstat(m.p(n)).st_size for n in os.listdir(m.mnt)}
    assert got == want
    # excluded entries are refused by name
    hidden = set(os.listdir(os.path.join(vectors, name, "cipher"))) - set(got)
    assert len(hidden) == 5
    for n in hidden:
        expect_errno(errno.EPERM, os.lstat, m.p(n))


EXCLUDE_SETS = [
    ["-exclude", "sub"],
    ["-e", "size1.bin", "-e", "sub/" + "D" * 180 + ",same"],
    ["-ew", "*.bin", "-ew", "!size1*"],
    ["-ew", "n*", "-ew", "**/deep.txt", "-ew", "sub/"],
    ["-exclude-from", "@FILE"],
    # gocryptfs's flag library: the first -exclude-wildcard replaces what
    # -ew gave, and "-e" items are a CSV list
    ["-ew", "*.bin", "-exclude-wildcard", "n*", "-e", '"size1.bin",hl1'],
]
EXCLUDE_FILE = "# a comment\r\n\n*.bin\r\n!/size4096.bin\n  link_*  \nsame\n"


@pytest.mark.parametrize("flags", EXCLUDE_SETS,
                         ids=["e-dir", "e-long-csv", "ew-negate",
                              "ew-mixed", "exclude-from", "alias-quirk"])
def test_exclude_same_as_gocryptfs(mounter, gocryptfs, tmp_path, flags):
    plain = str(tmp_path / "plain")
    _init_reverse(mounter, plain, [])
    populate(plain)
    os.unlink(os.path.join(plain, "big20m.bin"))
    exf = str(tmp_path / "exclude.txt")
    with open(exf, "w") as f:
        f.write(EXCLUDE_FILE)
    flags = [exf if a == "@FILE" else a for a in flags]
    v = _rmount(mounter, plain, extra=flags)
    g = _rmount(mounter, plain, binary=gocryptfs, extra=flags)
    full = _rmount(mounter, plain)
    got = view_snapshot(v.mnt)
    # gocryptfs 2.3 matches the patterns against the ciphertext path of a
    # virtual .name file too: under -ew 'n*' the .name files in a directory
    # whose encrypted name starts with "n" (one in 64 keys) are listed but
    # refused with EPERM. veilfs shows them; compare the rest.
    refused = []
    want = view_snapshot(g.mnt, refused)
    shown = dict(got)
    for n in refused:
        assert n.endswith(".name") and any(
            fnmatch.fnmatch(c, "n*") for c in n.split("/")[:-1]), n
        assert shown.pop(n, None), "veilfs does not show %s" % n
    assert_same_views(shown, want, "excluding %s: views differ" % flags)
    hidden = set(view_snapshot(full.mnt)) - set(got)
    assert hidden, "nothing was excluded"
    # what is hidden is refused by name, by both
    top = sorted(n for n in hidden if "/" not in n)
    for n in top[:3]:
        expect_errno(errno.EPERM, os.lstat, v.p(n))
        expect_errno(errno.EPERM, os.lstat, g.p(n))
    # .name files go with their entries
    for n in got:
        if n.endswith(".name"):
            assert n[:-len(".name")] in got


def test_config_never_excluded(mounter, tmp_path):
    plain = str(tmp_path / "plain")
    _init_reverse(mounter, plain, [])
    write_file(os.path.join(plain, "a"), b"a")
    m = _rmount(mounter, plain, extra=["-ew", "*", "-ew", ".*", "-e", CONF])
    assert sorted(os.listdir(m.mnt)) == ["gocryptfs.conf",
                                         "gocryptfs.diriv"]
    assert read_file(m.p("gocryptfs.conf")) == read_file(
        os.path.join(plain, CONF))


def test_config_flag(mounter, gocryptfs, tmp_path):
    """With -config the reverse config is not mapped (spec §5.6): a
    .gocryptfs.reverse.conf in the directory is an ordinary file."""
    plain = str(tmp_path / "plain")
    _init_reverse(mounter, plain, [])
    conf = str(tmp_path / "elsewhere.conf")
    shutil.copy2(os.path.join(plain, CONF), conf)
    write_file(os.path.join(plain, "f"), b"file")
    extra = ["-config", conf]
    v = _rmount(mounter, plain, extra=extra)
    g = _rmount(mounter, plain, binary=gocryptfs, extra=extra)
    got = view_snapshot(v.mnt)
    assert "gocryptfs.conf" not in got and len(got) == 3  # f, conf, diriv
    assert_same_views(got, view_snapshot(g.mnt), "-config views differ")


def _changes(plain):
    def j(*a):
        return os.path.join(plain, *a)

    with open(j("size1.bin"), "ab") as f:
        f.write(b"appended")
    os.truncate(j("size12289.bin"), 5000)
    with open(j("size8192.bin"), "r+b") as f:
        f.seek(100)
        f.write(b"overwritten")
    write_file(j("new.txt"), b"created while mounted")
    write_file(j("N" * 230), b"new long name")
    os.unlink(j("size4095.bin"))
    os.rename(j("size4097.bin"), j("renamed.bin"))
    os.rename(j("sub"), j("moved" + "M" * 190))
    os.mkdir(j("newdir"))
    write_file(j("newdir", "x"), b"x")
    os.link(j("size5000.bin"), j("newdir", "hardlink"))
    os.chmod(j("private"), 0o640)
    os.unlink(j("link_rel"))
    os.symlink("other-target", j("link_rel"))
    os.rmdir(j("emptydir"))


def test_live_changes(mounter, gocryptfs, tmp_path):
    """Changes to the plaintext while mounted show up in the view (after
    the attribute timeout) as a fresh mount of gocryptfs shows them. (A
    mount of gocryptfs 2.3 that was up during the changes still shows the
    old gocryptfs.diriv and .name contents below a renamed directory.)"""
    plain = str(tmp_path / "plain")
    _init_reverse(mounter, plain, [])
    populate(plain)
    os.unlink(os.path.join(plain, "big20m.bin"))
    v = _rmount(mounter, plain)
    # the kernel caches what it has seen: look at everything first
    view_snapshot(v.mnt)
    _changes(plain)
    time.sleep(SETTLE)
    got = view_snapshot(v.mnt)
    g = _rmount(mounter, plain, binary=gocryptfs)
    assert_same_views(got, view_snapshot(g.mnt),
                      "the live view differs from a fresh gocryptfs mount")
    # and the live view decrypts
    copy = str(tmp_path / "copy")
    subprocess.run(["cp", "-a", v.mnt, copy], check=True)
    check_copy_mounts(mounter, gocryptfs, copy, plain_snapshot(plain))


def test_hard_links(mounter, gocryptfs, tmp_path):
    """spec §5.4: a hard-linked file keeps the file ID of the first path it
    was opened through, for the rest of the mount, as in gocryptfs."""
    plain = str(tmp_path / "plain")
    _init_reverse(mounter, plain, [])
    write_file(os.path.join(plain, "a"), b"linked content")
    os.mkdir(os.path.join(plain, "d"))
    os.link(os.path.join(plain, "a"), os.path.join(plain, "d", "b"))
    v = _rmount(mounter, plain)
    g = _rmount(mounter, plain, binary=gocryptfs)

    def names(m):
        top = [n for n in os.listdir(m.mnt)
               if os.path.isfile(m.p(n)) and not n.startswith("gocryptfs")]
        d = [n for n in os.listdir(m.mnt) if os.path.isdir(m.p(n))][0]
        sub = [n for n in os.listdir(m.p(d)) if n != "gocryptfs.diriv"]
        return m.p(top[0]), m.p(d, sub[0])

    firsts = {}
    for m in (v, g):
        a, b = names(m)
        first = firsts[m] = read_file(b)  # the second link first
        assert read_file(a) == first
        subprocess.run(["sh", "-c", "sync; echo 3 >/proc/sys/vm/drop_caches"])
        time.sleep(SETTLE)
        assert read_file(a) == first
    assert read_file(names(v)[0]) == read_file(names(g)[0])
    # Also once the name it was first opened through is gone and one is
    # left (the file ID once changed then, within the mount, as the link
    # count fell to 1).
    os.unlink(os.path.join(plain, "d", "b"))
    subprocess.run(["sh", "-c", "sync; echo 3 >/proc/sys/vm/drop_caches"])
    time.sleep(SETTLE)
    for m in (v, g):
        top = [n for n in os.listdir(m.mnt)
               if os.path.isfile(m.p(n)) and not n.startswith("gocryptfs")]
        assert read_file(m.p(top[0])) == firsts[m], m.binary


def test_open_after_the_name_looked_up_last_went(mounter, tmp_path):
    """Two hard links a and b, both looked up in the view, b last; b is
    removed from the plain tree: opening a at once reads the file (the
    daemon once opened it through b, the name it had seen last, and
    answered ENOENT; gocryptfs 2.3 does too). Then a renamed over by
    another file, looked up anew: that file."""
    plain = str(tmp_path / "plain")
    _init_reverse(mounter, plain, ["-plaintextnames"])
    write_file(os.path.join(plain, "a"), b"linked content")
    os.link(os.path.join(plain, "a"), os.path.join(plain, "b"))
    v = _rmount(mounter, plain)
    os.stat(v.p("a"))
    os.stat(v.p("b"))
    os.unlink(os.path.join(plain, "b"))
    with open(v.p("a"), "rb") as f:
        first = f.read()
    assert len(first) == 18 + 16 + len(b"linked content") + 16
    write_file(os.path.join(plain, "c"), b"another file, longer")
    os.rename(os.path.join(plain, "c"), os.path.join(plain, "a"))
    time.sleep(SETTLE)
    with open(v.p("a"), "rb") as f:
        assert len(f.read()) == 18 + 16 + len(b"another file, longer") + 16


def test_no_holes(mounter, tmp_path):
    """spec §5.4: the view reports no holes, so cp copies a sparse file
    correctly (gocryptfs 2.3 does not: vectors/reverse/seek_data_quirk)."""
    plain = str(tmp_path / "plain")
    _init_reverse(mounter, plain, ["-plaintextnames"])
    with open(os.path.join(plain, "holes.bin"), "wb") as f:
        f.seek(10000)
        f.write(b"X")
    with open(os.path.join(plain, "big.bin"), "wb") as f:
        f.write(b"start")
        f.seek(8 << 20)
        f.write(b"end")
    m = _rmount(mounter, plain)
    for n in ("holes.bin", "big.bin"):
        p = m.p(n)
        size = os.stat(p).st_size
        fd = os.open(p, os.O_RDONLY)
        try:
            assert os.lseek(fd, 0, os.SEEK_DATA) == 0
            assert os.lseek(fd, 0, os.SEEK_HOLE) == size
            assert os.lseek(fd, size - 1, os.SEEK_DATA) == size - 1
            expect_errno(errno.ENXIO, os.lseek, fd, size, os.SEEK_DATA)
        finally:
            os.close(fd)
        dst = str(tmp_path / ("copy-" + n))
        subprocess.run(["cp", "--sparse=always", p, dst], check=True)
        assert read_file(dst) == read_file(p)
        assert read_file(p)[:2] == b"\x00\x02"


def test_read_only(mounter, tmp_path):
    plain = str(tmp_path / "plain")
    _init_reverse(mounter, plain, [])
    write_file(os.path.join(plain, "f"), b"data")
    os.mkdir(os.path.join(plain, "d"))
    before = util.snapshot(plain)
    m = _rmount(mounter, plain)
    f = [n for n in os.listdir(m.mnt) if os.path.isfile(m.p(n)) and
         not n.startswith("gocryptfs")][0]
    d = [n for n in os.listdir(m.mnt) if os.path.isdir(m.p(n))][0]
    for fn, args in ((os.open, (m.p("new"), os.O_CREAT | os.O_WRONLY)),
                     (os.open, (m.p(f), os.O_WRONLY)),
                     (os.open, (m.p(f), os.O_RDWR)),
                     (os.mkdir, (m.p("nd"),)),
                     (os.unlink, (m.p(f),)),
                     (os.rmdir, (m.p(d),)),
                     (os.rename, (m.p(f), m.p("r"))),
                     (os.symlink, ("t", m.p("l"))),
                     (os.link, (m.p(f), m.p("h"))),
                     (os.chmod, (m.p(f), 0o600)),
                     (os.truncate, (m.p(f), 0)),
                     (os.utime, (m.p(f), (1, 1))),
                     (os.setxattr, (m.p(f), "user.x", b"1")),
                     (os.unlink, (m.p("gocryptfs.diriv"),))):
        expect_errno(errno.EROFS, fn, *args)
    assert os.listxattr(m.p(f)) == []
    expect_errno(errno.ENODATA, os.getxattr, m.p(f), "user.x")
    expect_errno(errno.EOPNOTSUPP, os.getxattr, m.p(f), "security.selinux")
    mounter.unmount(m)
    assert util.snapshot(plain) == before


def test_ls_l_asks_once_per_file(mounter, tmp_path):
    """ls -l of a view asks every file for its SELinux label and its ACL;
    the label is answered "not supported", so ls stops asking for it: the
    GETXATTR requests that reach the daemon (-fusedebug) are about one per
    file, the ACL's, not two."""
    plain = str(tmp_path / "plain")
    _init_reverse(mounter, plain, [])
    os.mkdir(os.path.join(plain, "d"))
    for i in range(40):
        write_file(os.path.join(plain, "d", "f%d" % i), b"x")
    m = _rmount(mounter, plain, extra=["-fusedebug"])
    d = [n for n in os.listdir(m.mnt) if os.path.isdir(m.p(n))][0]
    n = util.ls_xattr_requests(m, m.p(d))
    # 80 and more if ls asked for labels too
    assert 40 <= n <= 45, n
    mounter.unmount(m)


def test_idle_ignored(mounter, gocryptfs, tmp_path):
    """-idle is for forward mode only: gocryptfs 2.3 ignores it in reverse
    mode, and so does veilfs (the view stays mounted however long it is
    left alone)."""
    plain = str(tmp_path / "plain")
    _init_reverse(mounter, plain, [])
    write_file(os.path.join(plain, "f"), b"data")
    ms = [_rmount(mounter, plain, b, extra=["-idle", "1s"])
          for b in (util.VEILFS_BIN, gocryptfs)]
    time.sleep(3)
    for m in ms:
        assert m.running and os.path.ismount(m.mnt), m.log()
        mounter.unmount(m)


def test_one_file_system(mounter, gocryptfs, tmp_path):
    plain = str(tmp_path / "plain")
    _init_reverse(mounter, plain, [])
    write_file(os.path.join(plain, "f"), b"f")
    with util.tmpfs(plain, "4m") as t:
        write_file(os.path.join(t, "inside"), b"on another filesystem")
        os.mkdir(os.path.join(t, "dir"))
        flag = ["-one-file-system"]
        v = _rmount(mounter, plain, extra=flag)
        g = _rmount(mounter, plain, binary=gocryptfs, extra=flag)
        full = _rmount(mounter, plain)
        got = view_snapshot(v.mnt)
        assert_same_views(got, view_snapshot(g.mnt),
                          "-one-file-system views differ")
        assert len(view_snapshot(full.mnt)) == len(got) + 3
        d = [n for n in os.listdir(v.mnt) if os.path.isdir(v.p(n))][0]
        assert os.listdir(v.p(d)) == ["gocryptfs.diriv"]
        for m in (v, g, full):
            mounter.unmount(m)


def test_long_symlink_target(mounter, gocryptfs, tmp_path):
    """A target whose encryption would pass 4096 characters (spec §4.9):
    size 0 and ENAMETOOLONG, as gocryptfs shows it."""
    plain = str(tmp_path / "plain")
    _init_reverse(mounter, plain, [])
    os.symlink("t" * 3100, os.path.join(plain, "toolong"))
    os.symlink("t" * 3000, os.path.join(plain, "fits"))
    v = _rmount(mounter, plain)
    g = _rmount(mounter, plain, binary=gocryptfs)
    for m in (v, g):
        links = sorted((os.lstat(m.p(n)).st_size, n)
                       for n in os.listdir(m.mnt)
                       if os.path.islink(m.p(n)))
        assert [s for s, _ in links] == [0, 4043]
        expect_errno(errno.ENAMETOOLONG, os.readlink, m.p(links[0][1]))
    assert sorted(os.readlink(v.p(n)) for n in os.listdir(v.mnt)
                  if os.path.islink(v.p(n)) and os.lstat(v.p(n)).st_size) \
        == sorted(os.readlink(g.p(n)) for n in os.listdir(g.mnt)
                  if os.path.islink(g.p(n)) and os.lstat(g.p(n)).st_size)


def _run(binary, *args):
    return subprocess.run([binary, *args], stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=60 * util.SLOW)


# Informational lines either program prints on the way (not errors).
INFO = ("passfile: reading from file", "Decrypting master key",
        "Using config file at custom location")


def _error_lines(p):
    return [line for line in p.stderr.decode(errors="replace").splitlines()
            if line and not any(i in line for i in INFO)]


def test_bad_input(mounter, gocryptfs, tmp_path):
    """Failures give gocryptfs's exit code and one line saying why."""
    pw = mounter.passfile
    empty = str(tmp_path / "empty")
    os.mkdir(empty)
    fwd = str(tmp_path / "fwd")
    os.mkdir(fwd)
    util.run_init(util.VEILFS_BIN, fwd, pw, ["-gcm"])
    rev = str(tmp_path / "rev")
    _init_reverse(mounter, rev, [])
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    cases = [
        # no config
        ["-reverse", "-passfile", pw, empty, mnt],
        # a forward cipherdir has no reverse config
        ["-reverse", "-passfile", pw, fwd, mnt],
        # a config without AESSIV
        ["-reverse", "-config", os.path.join(fwd, "gocryptfs.conf"),
         "-passfile", pw, empty, mnt],
        # -exclude in forward mode
        ["-exclude", "x", "-passfile", pw, fwd, mnt],
        # an -exclude-from file that cannot be read
        ["-reverse", "-exclude-from", str(tmp_path / "nonexistent"),
         "-passfile", pw, rev, mnt],
    ]
    for args in cases:
        g = _run(gocryptfs, "-fg", *args)
        v = _run(util.VEILFS_BIN, "-fg", *args)
        assert v.returncode == g.returncode != 0, (args, v.stderr, g.stderr)
        lines = _error_lines(v)
        assert len(lines) == 1, (args, lines)
        assert not os.path.ismount(mnt)
    # -init -reverse refuses an existing config the same way
    g = _run(gocryptfs, "-init", "-reverse", "-scryptn", "10",
             "-passfile", pw, rev)
    v = _run(util.VEILFS_BIN, "-init", "-reverse", "-scryptn", "10",
             "-passfile", pw, rev)
    assert v.returncode == g.returncode == 7
    assert len(_error_lines(v)) == 1


@pytest.mark.skipif(not os.environ.get("VEILFS_LONG"),
                    reason="long test (VEILFS_LONG=1)")
def test_stream_1gib(mounter, gocryptfs, tmp_path):
    """A 1 GiB file streams through the view without the daemon holding
    it: dd of both views gives the same bytes, and the daemon's peak RSS
    stays far below the file size."""
    plain = str(tmp_path / "plain")
    _init_reverse(mounter, plain, [])
    with open(os.path.join(plain, "big"), "wb") as f:
        block = util.rand_bytes(1 << 20, 1)
        for i in range(1024):
            f.write(block[i:] + block[:i])
    v = _rmount(mounter, plain)
    g = _rmount(mounter, plain, binary=gocryptfs)
    sums = []
    for m in (v, g):
        name = [n for n in os.listdir(m.mnt) if os.path.isfile(m.p(n))
                and not n.startswith("gocryptfs")][0]
        dd = subprocess.Popen(["dd", "if=" + m.p(name), "bs=128k",
                               "status=none"], stdout=subprocess.PIPE)
        h = hashlib.sha256()
        n = 0
        for chunk in iter(lambda: dd.stdout.read(1 << 20), b""):
            h.update(chunk)
            n += len(chunk)
        assert dd.wait() == 0
        assert n == os.stat(m.p(name)).st_size
        sums.append(h.hexdigest())
    assert sums[0] == sums[1]
    with open("/proc/%d/status" % v.proc.pid) as f:
        hwm = [int(line.split()[1]) for line in f
               if line.startswith("VmHWM:")][0]
    assert hwm < 256 * 1024, "daemon peak RSS %d KiB" % hwm


CTL_PATHS = ["size1.bin", "sub", "sub/inner.txt", "sub/" + "D" * 180,
             "sub/%s/deep.txt" % ("D" * 180), "caf\u00e9.txt",
             "200".ljust(200, "n"), "nonexist", "sub/nonexist",
             "gocryptfs.conf", CONF, "sub/gocryptfs.diriv"]


def _xray(sock, mode, lines):
    p = subprocess.run(["gocryptfs-xray", mode, sock],
                       input="".join(x + "\n" for x in lines).encode(),
                       capture_output=True, timeout=60 * util.SLOW)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


@pytest.mark.parametrize("variant", ["default", "plaintextnames"])
def test_ctlsock_same_as_gocryptfs(mounter, gocryptfs, tmp_path, variant):
    """-ctlsock of a reverse mount: plaintext paths to the view's paths and
    back, as gocryptfs answers (gocryptfs-xray is the client)."""
    if not shutil.which("gocryptfs-xray"):
        pytest.skip("gocryptfs-xray is missing")
    plain = str(tmp_path / "plain")
    _init_reverse(mounter, plain, VARIANTS[variant])
    populate(plain)
    vs, gs = str(tmp_path / "v.sock"), str(tmp_path / "g.sock")
    v = _rmount(mounter, plain, extra=["-ctlsock", vs])
    _rmount(mounter, plain, binary=gocryptfs, extra=["-ctlsock", gs])
    enc = [_xray(s, "-encrypt-paths", CTL_PATHS) for s in (vs, gs)]
    assert enc[0][:2] == enc[1][:2], (enc[0], enc[1])
    got = enc[0][1].split("\n")
    for plainpath, cpath in zip(CTL_PATHS[:7], got):
        assert os.path.lexists(v.p(cpath)), (plainpath, cpath)
    # back, and names that are nobody's (ENOENT from both)
    back = [g for g in got if g] + ["AAAAAAAAAAAAAAAAAAAAAA", "bad",
                                    "gocryptfs.conf", "gocryptfs.diriv",
                                    got[0] + "/x", "gocryptfs.longname.AAAA"]
    dec = [_xray(s, "-decrypt-paths", back) for s in (vs, gs)]
    assert dec[0] == dec[1], (dec[0], dec[1])
    # A path whose directory is gone from the plain tree: names that are
    # not long decrypt without it (veilfs once opened every directory on
    # the way: ENOENT); a long name needs its directory listed.
    os.rename(os.path.join(plain, "sub"), os.path.join(plain, "gone"))
    dec = [_xray(s, "-decrypt-paths", got[2:5]) for s in (vs, gs)]
    assert dec[0] == dec[1], (dec[0], dec[1])
    if variant == "default":
        assert dec[0][1].split("\n")[0] == "sub/inner.txt", dec[0]


def test_deep_chain_after_a_rename(mounter, tmp_path):
    """A chain of directories far deeper than any path (1,500 levels,
    made and walked through directory fds) under a reverse view whose
    daemon's threads have 512 KiB stacks (4 MiB in the sanitizer stage):
    after a rename near the top makes every remembered path stale, a
    listing at the bottom derives the whole chain's paths again -- once
    one stack frame per level, which overflowed the stack and killed the
    daemon. Now the listing works, and so does the rest of the view."""
    depth = 1500
    plain = str(tmp_path / "plain")
    _init_reverse(mounter, plain, [])
    fd = os.open(plain, os.O_RDONLY | os.O_DIRECTORY)
    top = fd
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        nfd = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        if fd != top:
            os.close(fd)
        fd = nfd
    wfd = os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(wfd, b"bottom")
    os.close(wfd)
    os.close(fd)
    os.close(top)
    # 512 KiB; the sanitizer stage's unoptimized build needs more before
    # any request (its AVX-512 backends' self-test alone has 1.3 MB stack
    # frames there), so the overflow this test is about is caught by the
    # optimized stage.
    stack_kib = 4096 if os.environ.get("VEILFS_SANITIZED") else 512
    wrapper = tmp_path / "veilfs-small-stack"
    wrapper.write_text("#!/bin/sh\nulimit -s %d\nexec %s \"$@\"\n"
                       % (stack_kib, util.VEILFS_BIN))
    wrapper.chmod(0o755)
    m = _rmount(mounter, plain, binary=str(wrapper))
    fds = [os.open(m.mnt, os.O_RDONLY | os.O_DIRECTORY)]
    try:
        for _ in range(depth):
            names = [n for n in os.listdir(fds[-1])
                     if not n.startswith("gocryptfs.")]
            assert len(names) == 1, names
            fds.append(os.open(names[0], os.O_RDONLY | os.O_DIRECTORY,
                               dir_fd=fds[-1]))
        bottom = [n for n in os.listdir(fds[-1]) if n != "gocryptfs.diriv"]
        assert len(bottom) == 1
        os.rename(os.path.join(plain, "d"), os.path.join(plain, "e"))
        assert len(os.listdir(m.mnt)) >= 2  # the new name, looked up
        again = [n for n in os.listdir(fds[-1]) if n != "gocryptfs.diriv"]
        assert len(again) == 1
        st = os.stat(again[0], dir_fd=fds[-1])
        assert st.st_size > len(b"bottom")  # header, nonce, tag
        assert m.proc.poll() is None
        assert "gocryptfs.conf" in os.listdir(m.mnt)
    finally:
        for f in reversed(fds):
            os.close(f)
        _remove_chain(plain, depth)


def _remove_chain(plain, depth):
    """Remove the chain of test_deep_chain_after_a_rename bottom-up
    through fds (pytest's own cleanup recurses once per level in
    Python and gives up at 1,000)."""
    first = "e" if os.path.exists(os.path.join(plain, "e")) else "d"
    fds = [os.open(plain, os.O_RDONLY | os.O_DIRECTORY)]
    name = first
    for _ in range(depth):
        fds.append(os.open(name, os.O_RDONLY | os.O_DIRECTORY,
                           dir_fd=fds[-1]))
        name = "d"
    os.unlink("f", dir_fd=fds[-1])
    for i in range(len(fds) - 1, 0, -1):
        os.close(fds[i])
        os.rmdir("d" if i > 1 else first, dir_fd=fds[i - 1])
    os.close(fds[0])


def test_long_names_looked_up_without_listing(mounter, tmp_path):
    """Hashed long names looked up one by one with no listing first (a
    restore from a list of names): each is found, the remembered scan of
    the directory follows what changes in it (a new file, a removed one,
    the directory renamed: new IV, new names), and a second mount of the
    same directory -- which lists it -- agrees on every name."""
    plain = str(tmp_path / "plain")
    _init_reverse(mounter, plain, [])
    d = os.path.join(plain, "d")
    os.mkdir(d)
    for i in range(300):
        write_file(os.path.join(d, "%03d_" % i + "L" * 200), b"x" * i)
    write_file(os.path.join(d, "short"), b"s")
    lister = _rmount(mounter, plain)
    m = _rmount(mounter, plain)

    def names(sub):
        return sorted(n for n in os.listdir(lister.p(sub))
                      if n.startswith("gocryptfs.longname.") and
                      not n.endswith(".name"))

    enc_d = [n for n in os.listdir(lister.mnt)
             if not n.startswith("gocryptfs.")][0]
    longs = names(enc_d)
    assert len(longs) == 300
    sizes = sorted(os.stat(m.p(enc_d, n)).st_size for n in longs)
    assert sizes == sorted(os.stat(lister.p(enc_d, n)).st_size
                           for n in longs)
    write_file(os.path.join(d, "new_" + "N" * 200), b"new")
    os.unlink(os.path.join(d, "000_" + "L" * 200))
    now = names(enc_d)
    added = set(now) - set(longs)
    gone = set(longs) - set(now)
    assert len(added) == 1 and len(gone) == 1
    assert os.stat(m.p(enc_d, added.pop())).st_size > 0
    # (m's kernel still holds the gone name's entry: ask a fresh mount)
    fresh = _rmount(mounter, plain)
    expect_errno(errno.ENOENT, os.stat, fresh.p(enc_d, gone.pop()))
    os.rename(d, os.path.join(plain, "e"))
    enc_e = [n for n in os.listdir(lister.mnt)
             if not n.startswith("gocryptfs.")][0]
    assert enc_e != enc_d
    renamed = names(enc_e)
    assert len(renamed) == 300 and not set(renamed) & set(now)
    for n in renamed[:20]:
        assert stat.S_ISREG(os.stat(m.p(enc_e, n)).st_mode)
        assert os.stat(m.p(enc_e, n + ".name")).st_size > 0
