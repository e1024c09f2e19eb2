# SPDX-License-Identifier: MIT
"""-badname PATTERN (issue #15, point 3; spec §4.6): names in a cipherdir
that do not decrypt and match a glob are shown with the longest
decryptable prefix and " GOCRYPTFS_BAD_NAME", and can be read, renamed and
deleted through that name. The listing is compared with gocryptfs 2.3
-badname on the same cipherdir (for names left by sync tools, truncated
and garbage names, random names where 2.3's lenient base64 finds a
garbage prefix, bad directories, leftovers, long names without sidecar),
and the same operations give the same results on copies."""

import errno
import os
import random
import shutil
import stat
import subprocess

import pytest

import util
from util import read_file, write_file

SUFFIX = " GOCRYPTFS_BAD_NAME"
URL64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

# name -> (init flags for veilfs -init, or None for a -zerokey cipherdir,
#          extra mount flags)
CONFIGS = {
    "gcm": (["-gcm"], []),
    "aessiv": (["-aessiv"], []),
    "xchacha": (["-xchacha"], []),
    "deterministic": (["-gcm", "-deterministic-names"], []),
    "padded": (None, ["-zerokey", "-raw64=false"]),
}


def _backing(c, sub=""):
    return set(os.listdir(os.path.join(c, sub)))


def _make(mounter, tmp, config):
    init, extra = CONFIGS[config]
    if init is None:
        c = os.path.join(tmp, "zk")
        os.makedirs(c)
        write_file(os.path.join(c, "gocryptfs.diriv"), os.urandom(16), 0o400)
        args = list(extra)
    else:
        c = mounter.init(init)
        args = ["-passfile", mounter.passfile] + extra
    return c, args


def _stored_of(m, c, name, make):
    """Create name through mount m (make(path)); returns its new backing
    entry in c (the long-name entry for long names)."""
    before = _backing(c)
    make(m.p(name))
    new = [n for n in _backing(c) - before if not n.endswith(".name")]
    assert len(new) == 1, new
    return new[0]


def _populate(mounter, c, args):
    m = mounter.mount(c, args=args)
    s = {}
    s["hello"] = _stored_of(m, c, "hello.txt",
                            lambda p: write_file(p, b"hello\n"))
    s["a39"] = _stored_of(m, c, "a" * 39, lambda p: write_file(p, b"a39"))
    s["dir"] = _stored_of(m, c, "d", os.mkdir)
    write_file(m.p("d", "inner.txt"), b"inner")
    s["empty"] = _stored_of(m, c, "e", os.mkdir)
    s["long"] = _stored_of(m, c, "N" * 180, lambda p: write_file(p, b"N"))
    write_file(m.p("keep"), b"keep")
    write_file(m.p("real" + SUFFIX), b"a real name")
    mounter.unmount(m)
    return s


def _canonical(name):
    """Zero the unused bits of the last data character: gocryptfs 2.3 read
    names with other bits as the same bytes (a whole name 2.3 decrypts
    that way is a good name to it and a bad one to veilfs, which is
    strict); prefixes cut out of a name still have them."""
    data = name.rstrip("=")
    bits = {2: 4, 3: 2}.get(len(data) % 4)
    if not bits:
        return name
    v = URL64.index(data[-1]) >> bits << bits
    return data[:-1] + URL64[v] + name[len(data):]


def _random_names(rng, padded, count):
    out = set()
    while len(out) < count:
        n = rng.randrange(22, 241)
        name = "".join(rng.choice(URL64) for _ in range(n))
        if padded and rng.random() < 0.5:
            name = name[:n - n % 4 - 2] + "=="
        out.add(_canonical(name))
    return sorted(out)


def _inject(c, s, padded):
    """Damage of the kinds sync tools and crashes leave."""
    def cp(src, dst):
        src, dst = os.path.join(c, src), os.path.join(c, dst)
        if os.path.isdir(src):
            subprocess.run(["cp", "-a", src, dst], check=True)
        else:
            shutil.copyfile(src, dst)
    h, a, d = s["hello"], s["a39"], s["dir"]
    for suffix in ("XYZ", ".bak", " (1)", "_conflict-2024-01-01", h):
        cp(h, h + suffix)
    cp(h, h[:-1])
    cp(h, h[:-3])
    cp(a, a + "_conflict")
    cp(d, d + ".old")
    cp(s["empty"], s["empty"] + ".old")
    for name in ("garbage name!!", "x", "\u00e9t\u00e9", "A" * 22,
                 "G" * (255 - len(SUFFIX)), "G" * (256 - len(SUFFIX)),
                 "gocryptfs.diriv.rmdir.4242",
                 "gocryptfs.longname." + "Q" * 43):
        cp(h, name)
    # a long name whose sidecar is damaged stays hidden
    cp(s["long"], s["long"][:-3] + "abc")
    with open(os.path.join(c, s["long"][:-3] + "abc.name"), "w") as f:
        f.write("not-a-name")
    rng = random.Random(1500)
    for name in _random_names(rng, padded, 250):
        cp(h, name)


def _stats(mnt, names):
    """{name: (type, size)}, or None where the name cannot be looked up."""
    out = {}
    for n in names:
        try:
            st = os.lstat(os.path.join(os.fsencode(mnt), n))
            out[n] = (stat.S_IFMT(st.st_mode), st.st_size)
        except FileNotFoundError:
            out[n] = None
    return out


def _listing(mnt):
    return _stats(mnt, os.listdir(os.fsencode(mnt)))


def _listing_fresh(mounter, c, binary, args):
    """The names one mount lists, looked up on a second, fresh mount (so
    that each is a real lookup, not an entry the listing cached)."""
    m = mounter.mount(c, binary=binary, args=args)
    names = os.listdir(os.fsencode(m.mnt))
    mounter.unmount(m)
    m = mounter.mount(c, binary=binary, args=args)
    out = _stats(m.mnt, names)
    mounter.unmount(m)
    return out


def _same_listing(got, want):
    """veilfs (got) lists what gocryptfs 2.3 (want) lists, and finds every
    name it lists. gocryptfs loses some names it lists itself: bad names
    whose decrypted prefix was spelled with other unused base64 bits, and
    long names whose .name file is damaged."""
    assert sorted(got) == sorted(want), "\n".join(
        ["only veilfs: %r" % n for n in sorted(set(got) - set(want))] +
        ["only gocryptfs: %r" % n for n in sorted(set(want) - set(got))])
    assert None not in got.values(), [n for n, v in got.items() if v is None]
    lost = [n for n, v in want.items() if v is None]
    assert {n: v for n, v in got.items() if n not in lost} == \
        {n: v for n, v in want.items() if n not in lost}
    # how many gocryptfs loses depends on the run's random IVs and key
    # (two of 14 with "G*" once): the comparison must still cover most
    assert len(lost) <= len(want) // 4, lost


@pytest.fixture(params=list(CONFIGS))
def damaged(request, mounter, tmp_path):
    config = request.param
    c, args = _make(mounter, str(tmp_path), config)
    s = _populate(mounter, c, args)
    _inject(c, s, config == "padded")
    return c, args, s


@pytest.mark.parametrize("patterns", [["*"], ["*.bak", "*XYZ"],
                                      ["nothing*"], ["G*", "*=="]])
def test_badname_listing_like_gocryptfs(damaged, mounter, gocryptfs,
                                        patterns):
    c, args, _ = damaged
    bad = [x for p in patterns for x in ("-badname", p)]
    got = _listing_fresh(mounter, c, util.VEILFS_BIN, args + bad)
    want = _listing_fresh(mounter, c, gocryptfs, args + bad)
    _same_listing(got, want)
    shown = [n for n in got if n.endswith(SUFFIX.encode())]
    if patterns == ["*"]:
        assert b"hello.txtXYZ" + SUFFIX.encode() in shown
        assert b"hello.txt.bak" + SUFFIX.encode() in shown
        assert b"d.old" + SUFFIX.encode() in shown
        assert b"garbage name!!" + SUFFIX.encode() in shown
        assert len(shown) > 100
    elif patterns == ["nothing*"]:
        assert shown == [b"real" + SUFFIX.encode()]
    # without -badname none is shown (a few random names may decrypt to
    # random good names), and no -badname name resolves
    got = _listing_fresh(mounter, c, util.VEILFS_BIN, args)
    assert got == _listing_fresh(mounter, c, gocryptfs, args)
    assert {b"hello.txt", b"a" * 39, b"d", b"e", b"N" * 180, b"keep",
            b"real" + SUFFIX.encode()} <= set(got)
    assert len(got) < 12
    m = mounter.mount(c, args=args)
    util.expect_errno(errno.ENOENT, os.stat, m.p("hello.txtXYZ" + SUFFIX))


def _ops(m):
    """What a user rescuing files does, on a fresh mount (lookups without
    a listing first). Returns the outcome of each step."""
    def j(*a):
        return m.p(*a)

    def do(fn, *a):
        try:
            r = fn(*a)
            return ("ok", r if isinstance(r, (bytes, str, list)) else None)
        except OSError as e:
            return ("err", errno.errorcode[e.errno])

    res = []
    res.append(do(read_file, j("hello.txtXYZ" + SUFFIX)))
    res.append(do(read_file, j("real" + SUFFIX)))
    res.append(do(os.rename, j("hello.txt.bak" + SUFFIX), j("restored.txt")))
    res.append(do(read_file, j("restored.txt")))
    res.append(do(os.unlink, j("hello.txt (1)" + SUFFIX)))
    res.append(do(lambda p: sorted(os.listdir(p)), j("d.old" + SUFFIX)))
    res.append(do(read_file, j("d.old" + SUFFIX, "inner.txt")))
    res.append(do(write_file, j("d.old" + SUFFIX, "new.txt"), b"new"))
    res.append(do(os.rename, j("d.old" + SUFFIX), j("d-rescued")))
    res.append(do(os.rmdir, j("e.old" + SUFFIX)))
    res.append(do(os.rename, j("x" + SUFFIX), j("x-rescued")))
    res.append(do(os.unlink, j("garbage name!!" + SUFFIX)))
    res.append(do(write_file, j("brandnew" + SUFFIX), b"no"))
    res.append(do(os.mkdir, j("newdir" + SUFFIX)))
    res.append(do(os.stat, j("nonexistent" + SUFFIX)))
    res.append(do(os.stat, j("hello.txtXY" + SUFFIX)))
    return res


def test_badname_rescue_like_gocryptfs(damaged, mounter, gocryptfs,
                                       tmp_path):
    c, args, s = damaged
    copy = str(tmp_path / "copy-for-gocryptfs")
    subprocess.run(["cp", "-a", c, copy], check=True)
    bad = ["-badname", "*"]
    m = mounter.mount(c, args=args + bad)
    got = _ops(m)
    after = _listing(m.mnt)
    mounter.unmount(m)
    g = mounter.mount(copy, binary=gocryptfs, args=args + bad)
    want = _ops(g)
    assert got == want
    _same_listing(after, _listing(g.mnt))
    # A good name with the suffix: gocryptfs 2.3 takes "keep GOCRYPTFS_
    # BAD_NAME" for "keep" (a rename onto it is a no-op); veilfs resolves
    # only names it lists, so it is no name there.
    assert os.path.exists(g.p("keep" + SUFFIX))
    mounter.unmount(g)
    m = mounter.mount(c, args=args + bad)
    util.expect_errno(errno.ENOENT, os.stat, m.p("keep" + SUFFIX))
    util.expect_errno(errno.ENOENT, os.rename, m.p("keep"),
                      m.p("keep" + SUFFIX))
    mounter.unmount(m)
    assert got[0] == ("ok", b"hello\n") and got[3] == ("ok", b"hello\n")
    assert got[5] == ("ok", ["inner.txt"])
    assert got[12] == ("err", "ENOENT") and got[13] == ("err", "ENOENT")
    # the rescued files are ordinary files now, in both implementations
    for binary, d in ((util.VEILFS_BIN, c), (gocryptfs, copy)):
        m = mounter.mount(d, binary=binary, args=args)
        names = set(os.listdir(m.mnt))
        assert {"restored.txt", "x-rescued", "d-rescued"} <= names
        assert sorted(os.listdir(m.p("d-rescued"))) == ["inner.txt",
                                                        "new.txt"]
        assert read_file(m.p("x-rescued")) == b"hello\n"
        mounter.unmount(m)
    h = s["hello"]
    assert h + " (1)" not in _backing(c) and h + ".bak" not in _backing(c)
    assert "garbage name!!" not in _backing(c)


@pytest.mark.parametrize("names", [[], ["-deterministic-names"]])
@pytest.mark.parametrize("pattern", ["*", ".*", "?"])
def test_badname_never_names_dot_or_dotdot(mounter, tmp_path, names,
                                           pattern):
    """". GOCRYPTFS_BAD_NAME" and ".. GOCRYPTFS_BAD_NAME" are only names:
    with a pattern that matches "." or "..", stripping the suffix must
    not reach this directory or its parent (at the root: the directory
    that holds the cipherdir, outside it), in the root and below, and
    what a user does through them changes nothing outside."""
    c = mounter.init(["-gcm"] + names)
    outside = os.path.dirname(c)
    os.chmod(outside, 0o755)
    mode = os.stat(outside).st_mode
    m = mounter.mount(c, args=["-passfile", mounter.passfile,
                               "-badname", pattern])
    os.makedirs(m.p("a", "b"))
    write_file(m.p("a", "b", "f"), b"f")
    for d in ([], ["a"], ["a", "b"]):
        for dots in (".", ".."):
            p = m.p(*d, dots + SUFFIX)
            util.expect_errno(errno.ENOENT, os.stat, p)
            util.expect_errno(errno.ENOENT, os.chmod, p, 0o700)
            util.expect_errno(errno.ENOENT, os.listdir, p)
            util.expect_errno(errno.ENOENT, os.mkdir,
                              os.path.join(p, "x"))
            util.expect_errno(errno.ENOENT, os.stat,
                              os.path.join(p, dots + SUFFIX))
    assert os.stat(outside).st_mode == mode
    # the tree is whole and still usable
    os.mkdir(m.p("a", "b", "c"))
    assert sorted(os.listdir(m.p("a", "b"))) == ["c", "f"]
    assert read_file(m.p("a", "b", "f")) == b"f"
    assert sorted(os.listdir(m.p())) == ["a"]
