# SPDX-License-Identifier: MIT
"""veilfs -fsck and -fsck -repair on real cipherdirs made by veilfs and by
gocryptfs, one kind of damage at a time: what -fsck prints and its exit
code, compared with gocryptfs 2.3 -fsck on the same damage; what -repair
does; that nothing is lost (good blocks intact, every original in the
quarantine); that a second check (ours and gocryptfs's) is clean; and that
the repaired tree mounts under veilfs and gocryptfs and shows the same
files. Also the experiments/fsck.out vector case and -repair-truncate.

Where veilfs knowingly differs from gocryptfs 2.3 (it is stricter: an
orphan .name file and a file of 1..17 bytes are problems) the test says
so."""

import os
import re
import shutil

import pytest

import cli_util
import fsck_util as fu
import util
from conftest import require_fuse, require_gocryptfs

NONE = "fsck summary: no problems found"
ONE = "fsck summary: 1 corrupt files, 0 files skipped"
SAME = object()  # gocryptfs prints what veilfs prints


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    """Base cipherdirs, built once per (creator, variant)."""
    require_fuse()
    require_gocryptfs()
    return fu.make_bases(tmp_path_factory, "fsck-bases")


def read(p):
    if os.path.islink(p):
        return ("link", os.readlink(p))
    with open(p, "rb") as f:
        return f.read()


def zero_block(t, rel, n):
    b = bytearray(t[rel])
    end = min(len(b), 4096 * (n + 1))
    b[4096 * n:end] = bytes(end - 4096 * n)
    t[rel] = bytes(b)


def recover(t, *rels):
    """rels now live under recovery names in the same directory (a
    directory's subtree moves with it)."""
    for i, rel in enumerate(rels):
        d = os.path.dirname(rel)
        new = os.path.join(d, "recovered-%04d" % (9000 + i))
        for k in [k for k in t if k == rel or k.startswith(rel + "/")]:
            t[new + k[len(rel):]] = t.pop(k)


def e(s):
    return re.escape(s)


# --- the damage, one kind each ---------------------------------------------
# Each returns: summary (ours), gsummary (gocryptfs's, SAME if equal),
# lines (regexes our problem lines must include), fix (the tree a mount
# shows after -repair), saved (backing paths whose bytes must be in the
# quarantine), take (re-damage until gocryptfs sees it: for names, where a
# random change decrypts to a valid name with ~1/290 chance), again (when
# to take: by default while gocryptfs sees no problem).

def d_clean(cd):
    return dict(summary=NONE, lines=[])


def d_block(cd):
    p = cd.b("big.bin")
    fu.flip(p, fu.block_off(cd, 1))
    return dict(summary=ONE,
                lines=[r'^fsck: file "/big\.bin" \(ciphertext "%s"\): '
                       r'corrupt block 1 of 5$' % e(cd.names["big.bin"])],
                fix=lambda t: zero_block(t, "big.bin", 1), saved=[p])


def d_blocks(cd):
    p = cd.b("big.bin")
    fu.flip(p, fu.block_off(cd, 1))
    fu.flip(p, fu.block_off(cd, 3, 7))

    def fix(t):
        zero_block(t, "big.bin", 1)
        zero_block(t, "big.bin", 3)
    return dict(summary=ONE, lines=[r'"/big\.bin".*: corrupt blocks 1, 3 '
                                    r'of 5$'], fix=fix, saved=[p])


def d_header_bit(cd):
    # one flipped bit in the file ID: every block fails, but the check
    # finds the header under which they authenticate
    p = cd.b("multi.bin")
    fu.flip(p, 9, 0x01)
    return dict(summary=ONE, lines=[r'"/multi\.bin".*: header is damaged; '
                                    r'the blocks authenticate'],
                fix=lambda t: None, saved=[p])


def d_header_lost(cd):
    p = cd.b("multi.bin")
    with open(p, "r+b") as f:
        f.write(bytes(18))

    def fix(t):
        t["multi.bin"] = bytes(len(t["multi.bin"]))
    return dict(summary=ONE, lines=[r'"/multi\.bin".*: header is damaged: '
                                    r'none of its 4 blocks'],
                fix=fix, saved=[p])


def d_last_fragment(cd):
    # a torn last block of 10 bytes, too short to hold data
    p = cd.b("multi.bin")
    os.truncate(p, 18 + 3 * fu.CBS[cd.variant] + 10)

    def fix(t):
        t["multi.bin"] = t["multi.bin"][:3 * 4096]
    return dict(summary=ONE, lines=[r'"/multi\.bin".*: corrupt block 3 of '
                                    r'4; block 3 is a 10-byte fragment'],
                fix=fix, saved=[p])


def d_last_partial(cd):
    # a torn last block that still looks like 50 bytes of data
    p = cd.b("multi.bin")
    os.truncate(p, 18 + 3 * fu.CBS[cd.variant] + fu.OVERHEAD[cd.variant] +
                50)

    def fix(t):
        t["multi.bin"] = t["multi.bin"][:3 * 4096] + bytes(50)
    return dict(summary=ONE, lines=[r'"/multi\.bin".*: corrupt block 3 of '
                                    r'4$'], fix=fix, saved=[p])


def d_header_only(cd):
    # an interrupted write: valid (reads as empty), -repair tidies it
    p = cd.b("big.bin")
    os.truncate(p, 18)

    def fix(t):
        t["big.bin"] = b""
    return dict(summary=NONE, lines=[], fix=fix, saved=[p])


def d_short(cd):
    # 10 bytes cannot be a file; gocryptfs 2.3 logs it but counts nothing
    p = cd.b("big.bin")
    os.truncate(p, 10)

    def fix(t):
        t["big.bin"] = b""
    return dict(summary=ONE, gsummary=NONE,
                lines=[r'"/big\.bin".*: 10 bytes: shorter than a file '
                       r'header'], fix=fix, saved=[p])


B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def d_name(cd):
    p = cd.b("sub/f1")
    d, name = os.path.split(p)
    cur = [p]

    def mutate(k):
        # one character changed (not the last: its low bits are padding)
        c = B64[(B64.index(name[k]) + 1) % 64]
        new = os.path.join(d, name[:k] + c + name[k + 1:])
        os.rename(cur[0], new)
        cur[0] = new

    mutate(0)
    return dict(summary=ONE,
                lines=[r'^fsck: entry in dir "/sub" \(ciphertext "%s/[^"]+"'
                       r'\): name does not decrypt$' % e(cd.names["sub"])],
                fix=lambda t: recover(t, "sub/f1"),
                take=lambda k: mutate(k + 1))


def d_long_sidecar_flip(cd):
    side = cd.b(fu.LONG) + ".name"
    fu.writable(side)
    with open(side, "r+b") as f:
        b = f.read()
        f.seek(5)
        f.write(b"ABCDEFGHIJ" if b[5:15] != b"ABCDEFGHIJ" else b"JIHGFEDCBA")
    return dict(summary=ONE, lines=[r'ciphertext "%s"\): the name in its '
                                    r'\.name file does not decrypt$'
                                    % e(cd.names[fu.LONG])],
                fix=lambda t: recover(t, fu.LONG), saved=[side])


def d_no_sidecar(cd):
    side = cd.b(fu.LONG) + ".name"
    os.unlink(side)
    return dict(summary=ONE, lines=[r'ciphertext "%s"\): long name without '
                                    r'its \.name file$'
                                    % e(cd.names[fu.LONG])],
                fix=lambda t: recover(t, fu.LONG))


def d_orphan_sidecar(cd):
    # gocryptfs 2.3 does not look for these; veilfs counts them
    side = cd.b(fu.LONG) + ".name"
    orphan = os.path.join(cd.path, "gocryptfs.longname." + "A" * 43 +
                          ".name")
    shutil.copy(side, orphan)
    return dict(summary=ONE, gsummary=NONE,
                lines=[r'ciphertext "gocryptfs\.longname\.A{43}\.name"\): '
                       r'long-name \.name file without its entry$'],
                fix=lambda t: None, saved=[orphan])


def d_rmdir_leftover(cd):
    left = os.path.join(cd.path, "gocryptfs.diriv.rmdir.1234567")
    shutil.copy(os.path.join(cd.path, "gocryptfs.diriv"), left)
    return dict(summary=ONE, lines=[r'ciphertext "gocryptfs\.diriv\.rmdir\.'
                                    r'1234567"\): leftover of an '
                                    r'interrupted rmdir$'],
                fix=lambda t: None, saved=[left])


def _diriv(cd, rel):
    p = os.path.join(cd.b(rel), "gocryptfs.diriv")
    fu.writable(p)
    return p


SUB_ENTRIES = ("sub/f1", "sub/f2", "sub/deeper", "sub/" + "M" * 190)


def d_diriv_deleted(cd):
    os.unlink(_diriv(cd, "sub"))
    return dict(summary=ONE,
                lines=[r'^fsck: dir "/sub" \(ciphertext "%s"\): '
                       r'gocryptfs\.diriv is missing: no name in it can be '
                       r'decrypted$' % e(cd.names["sub"])],
                fix=lambda t: recover(t, *SUB_ENTRIES))


def d_diriv_truncated(cd):
    p = _diriv(cd, "sub")
    os.truncate(p, 10)
    return dict(summary=ONE, lines=[r'"/sub".*: gocryptfs\.diriv has 10 '
                                    r'bytes instead of 16'],
                fix=lambda t: recover(t, *SUB_ENTRIES), saved=[p])


def d_diriv_zero(cd):
    p = _diriv(cd, "sub")
    with open(p, "wb") as f:
        f.write(bytes(16))
    return dict(summary=ONE, lines=[r'"/sub".*: gocryptfs\.diriv is all '
                                    r'zero'],
                fix=lambda t: recover(t, *SUB_ENTRIES), saved=[p])


def d_diriv_swapped(cd):
    # two directories' IVs swapped (a sync tool's mix-up): both restored,
    # every name intact
    a, b = _diriv(cd, "sub"), _diriv(cd, "sub/deeper")
    va, vb = read(a), read(b)
    with open(a, "wb") as f:
        f.write(vb)
    with open(b, "wb") as f:
        f.write(va)
    return dict(summary=SAME, lines=[r'"/sub".*: name does not decrypt$'],
                fix=lambda t: None, saved=[a])


def d_diriv_foreign(cd):
    # the root's IV copied over sub's: the right one is gone for good
    p = _diriv(cd, "sub")
    shutil.copy(os.path.join(cd.path, "gocryptfs.diriv"), p)

    def other_iv(k):
        with open(p, "wb") as f:
            f.write(os.urandom(16))

    # a name decrypts under a wrong IV by chance (about 1 in 256): that
    # entry would stay under a garbage name, so draw another foreign IV
    return dict(summary=SAME, lines=[r'"/sub".*: name does not decrypt$'],
                fix=lambda t: recover(t, *SUB_ENTRIES), take=other_iv,
                again=lambda g: g.out.count('corrupt entry in dir "sub"')
                < len(SUB_ENTRIES))


def d_diriv_elsewhere(cd):
    # a sync tool moved sub's diriv aside as a "conflict copy"
    p = _diriv(cd, "sub")
    os.rename(p, os.path.join(cd.b("sub"), "gocryptfs.diriv.conflict-1"))
    # gocryptfs counts the missing IV; veilfs also the stray copy's name
    return dict(summary=ONE, lines=[r'"/sub".*: gocryptfs\.diriv is missing'],
                fix=lambda t: None)


def d_symlink(cd):
    p = cd.b("link")
    t = os.readlink(p)
    os.unlink(p)
    os.symlink(("B" if t[0] != "B" else "C") + t[1:], p)

    def fix(tr):
        del tr["link"]
    return dict(summary=ONE, lines=[r'^fsck: symlink "/link" \(ciphertext '
                                    r'"%s"\): target does not decrypt$'
                                    % e(cd.names["link"])],
                fix=fix, saved=[p])


def d_xattr_value(cd):
    p = cd.b("a.txt")
    fu.flip_xattr(p, fu.stored_xattr(p))

    def fix(t):
        t["xattrs"]["a.txt"] = None
    # a.txt and hard.txt are one inode: named by whichever comes first
    return dict(summary=ONE, lines=[r'^fsck: file "/(a|hard)\.txt" '
                                    r'\(ciphertext "(%s|%s)"\): value of '
                                    r'xattr "user\.foo" does not decrypt$'
                                    % (e(cd.names["a.txt"]),
                                       e(cd.names["hard.txt"]))], fix=fix)


def d_xattr_name(cd):
    p = cd.b("sub")
    cur = [None]

    def put(k):
        # an encrypted-looking attribute name that does not decrypt
        n = "user.gocryptfs." + "".join(B64[(7 * i + k) % 64]
                                        for i in range(21)) + "A"
        if cur[0]:
            os.removexattr(p, cur[0])
        os.setxattr(p, n, b"junk")
        cur[0] = n

    put(0)
    return dict(summary=ONE, lines=[r'"/sub".*: xattr name "user\.gocryptfs'
                                    r'\.[^"]+" does not decrypt$'],
                fix=lambda t: None, take=lambda k: put(k + 1))


def d_hardlink_block(cd):
    # a.txt and hard.txt are one inode: checked once, repaired in place
    p = cd.b("a.txt")
    fu.flip(p, fu.block_off(cd, 0, 2))

    def fix(t):
        t["a.txt"] = t["hard.txt"] = bytes(len(t["a.txt"]))
    return dict(summary=ONE, lines=[r'corrupt block 0 of 1$'], fix=fix,
                saved=[p])


DAMAGE = {f.__name__[2:]: f for f in (
    d_clean, d_block, d_blocks, d_header_bit, d_header_lost,
    d_last_fragment, d_last_partial, d_header_only, d_short, d_name,
    d_long_sidecar_flip, d_no_sidecar, d_orphan_sidecar, d_rmdir_leftover,
    d_diriv_deleted, d_diriv_truncated, d_diriv_zero, d_diriv_swapped,
    d_diriv_foreign, d_diriv_elsewhere, d_symlink, d_xattr_value,
    d_xattr_name, d_hardlink_block)}
# what applies without encrypted names (symlink targets are plain too) /
# without per-directory IVs
NAMELESS = ("name", "long_sidecar_flip", "no_sidecar", "orphan_sidecar",
            "rmdir_leftover", "diriv_deleted", "diriv_truncated",
            "diriv_zero", "diriv_swapped", "diriv_foreign",
            "diriv_elsewhere")
NO_DIRIV = ("diriv_deleted", "diriv_truncated", "diriv_zero",
            "diriv_swapped", "diriv_foreign", "diriv_elsewhere",
            "rmdir_leftover")
OTHER_VARIANTS = ("block", "last_partial", "header_bit", "name",
                  "diriv_deleted", "symlink", "xattr_value", "no_sidecar")


def cases():
    for creator in ("veilfs", "gocryptfs"):
        for name in DAMAGE:
            yield pytest.param(creator, "gcm", name,
                               id="%s-gcm-%s" % (creator, name))
    for variant in ("aessiv", "xchacha", "plaintextnames",
                    "deterministic-names", "longnamemax100"):
        for name in OTHER_VARIANTS:
            if variant == "plaintextnames" and (name in NAMELESS or
                                                name == "symlink"):
                continue
            if variant == "deterministic-names" and name in NO_DIRIV:
                continue
            creator = "gocryptfs" if variant in ("xchacha",
                                                 "longnamemax100") \
                else "veilfs"
            yield pytest.param(creator, variant, name,
                               id="%s-%s-%s" % (creator, variant, name))


def exit_for(summary):
    return 0 if summary == NONE else 26


@pytest.mark.parametrize("creator,variant,damage", list(cases()))
def test_fsck_damage(mounter, bases, tmp_path, creator, variant, damage):
    cd = bases(creator, variant).copy(str(tmp_path / "cipher"))
    want = fu.expected(cd)
    d = DAMAGE[damage](cd)
    g = fu.gfsck(cd)
    again = d.get("again", lambda g: fu.summary(g.out) == NONE)
    for k in range(8):
        if not d.get("take") or not again(g):
            break
        d["take"](k)  # the changed name happened to decrypt: again
        g = fu.gfsck(cd)
    saved = {p: read(p) for p in d.get("saved", [])}
    v = fu.vfsck(cd)
    gsum = d.get("gsummary", d["summary"])
    ours = fu.summary(g.out) if d["summary"] is SAME else d["summary"]
    if gsum is SAME:
        gsum = ours
    assert fu.summary(v.out) == ours, v.out
    assert v.returncode == exit_for(ours), v.out + v.err
    assert fu.summary(g.out) == gsum, g.out
    assert g.returncode == exit_for(gsum)
    lines = fu.problems(v.out)
    for pat in d["lines"]:
        assert any(re.search(pat, line) for line in lines), \
            "no line matches %r:\n%s" % (pat, v.out)
    if ours == NONE:
        assert not lines, v.out

    r = fu.vfsck(cd, "-repair")
    assert r.returncode == 0, r.out + r.err
    if ours == NONE and not saved:
        assert "repair summary" not in r.out
        return
    qdir = fu.quarantine_of(r.out)
    assert os.path.isabs(qdir) and not qdir.startswith(cd.path + "/")
    assert os.path.isfile(os.path.join(qdir, "report.txt"))
    kept = list(fu.quarantine_files(qdir).values())
    for p, data in saved.items():
        assert data in kept, "%s is not in the quarantine" % p
    m = re.search(r"repair summary: (\d+) of (\d+) problems repaired",
                  r.out)
    assert m and m.group(1) == m.group(2), r.out

    v2 = fu.vfsck(cd)
    assert fu.summary(v2.out) == NONE and v2.returncode == 0, v2.out
    g2 = fu.gfsck(cd)
    assert fu.summary(g2.out) == NONE and g2.returncode == 0, g2.out
    if "fix" in d:
        d["fix"](want)
    got = fu.mounted_trees(mounter, cd, util.GOCRYPTFS_BIN)
    assert fu.canonical(got) == fu.canonical(want)
    if damage == "hardlink_block":
        st = os.stat(cd.b("a.txt"))
        assert st.st_nlink == 2 and st.st_ino == os.stat(
            cd.b("hard.txt")).st_ino


# --- what gocryptfs sees and counts (each once failed here) -----------------

def check_and_repair(cd, want_summary):
    """veilfs -fsck prints gocryptfs's summary and exit code, -repair
    fixes everything, and both checks are clean after it."""
    g = fu.gfsck(cd)
    v = fu.vfsck(cd)
    assert fu.summary(g.out) == want_summary, g.out
    assert fu.summary(v.out) == want_summary, v.out
    assert v.returncode == g.returncode == exit_for(want_summary), v.out
    r = fu.vfsck(cd, "-repair")
    assert r.returncode == 0, r.out + r.err
    m = re.search(r"repair summary: (\d+) of (\d+) problems repaired",
                  r.out)
    assert m and m.group(1) == m.group(2), r.out
    for res in (fu.vfsck(cd), fu.gfsck(cd)):
        assert fu.summary(res.out) == NONE and res.returncode == 0, res.out
    return v, r


def test_hidden_hard_link_does_not_hide_the_visible_one(bases, tmp_path):
    """A hard link under a name that does not decrypt, listed before the
    visible link: the visible file's bad block is still found (gocryptfs
    cannot see the hidden link: it counts the entry and the file)."""
    cd = bases("veilfs", "gcm").copy(str(tmp_path / "cipher"))
    p = cd.b("big.bin")
    fu.flip(p, fu.block_off(cd, 1))
    # '-' sorts before every other base64url character; a name decrypts
    # by chance now and then: another one then
    for k in range(1, 9):
        hidden = os.path.join(cd.path, "-" * k + "A" * (22 - k))
        os.link(p, hidden)
        if "2 corrupt files" in fu.summary(fu.gfsck(cd).out):
            break
        os.unlink(hidden)
    v, _ = check_and_repair(cd, "fsck summary: 2 corrupt files, "
                                "0 files skipped")
    assert re.search(r'^fsck: file "/big\.bin" .*corrupt block 1 of 5$',
                     v.out, re.M), v.out


def test_wrong_long_name_hash_hides_what_is_in_it(bases, tmp_path,
                                                  mounter):
    """A long-named file stored under the wrong hash: gocryptfs cannot
    look it up, so it counts the entry and never reads the file (its
    bad block is not counted); -repair restores both."""
    cd = bases("veilfs", "gcm").copy(str(tmp_path / "cipher"))
    want = fu.expected(cd)
    p = cd.b(fu.LONG)
    fu.flip(p, fu.block_off(cd, 0, 2))
    new = os.path.join(cd.path, "gocryptfs.longname." + "A" * 43)
    os.rename(p, new)
    os.rename(p + ".name", new + ".name")
    v, _ = check_and_repair(cd, ONE)
    assert re.search(r'"gocryptfs\.longname\.A{43}"\): stored under the '
                     r'wrong long-name hash$', v.out, re.M), v.out
    want[fu.LONG] = bytes(len(want[fu.LONG]))
    got = fu.mounted_trees(mounter, cd, util.GOCRYPTFS_BIN)
    assert fu.canonical(got) == fu.canonical(want)


def test_encrypted_acl_name(bases, tmp_path):
    """An ACL xattr whose name old gocryptfs versions encrypted
    (user.gocryptfs.<enc("system.posix_acl_access")>): gocryptfs 2.3
    ignores it and counts a corrupt xattr name; -repair removes it and
    keeps its value."""
    from test_reliability_tamper import mkname
    cd = bases("veilfs", "gcm").copy(str(tmp_path / "cipher"))
    with open(cd.passfile) as f:
        mk = cli_util.veilfs_key(cd.path, f.read().strip())
    # xattr names are encrypted with this fixed tweak (spec §4.10)
    enc = mkname(mk, b"xattr_name_iv_xx".hex(), b"system.posix_acl_access")
    name = "user.gocryptfs." + enc
    value = b"an old encrypted ACL"
    os.setxattr(cd.b("big.bin"), name, value)
    v, r = check_and_repair(cd, ONE)
    assert re.search(r'^fsck: file "/big\.bin" .*: xattr name "%s" is the '
                     r'ACL "system\.posix_acl_access" encrypted' % e(name),
                     v.out, re.M), v.out
    assert name not in os.listxattr(cd.b("big.bin"))
    kept = fu.quarantine_files(fu.quarantine_of(r.out)).values()
    assert value in kept


def test_conf_bak_is_a_users_file_with_plaintext_names(bases, tmp_path):
    """With -plaintextnames /gocryptfs.conf.bak is a file in the mount
    like any other: its bad block is found and repaired."""
    cd = bases("veilfs", "plaintextnames").copy(str(tmp_path / "cipher"))
    bak = os.path.join(cd.path, "gocryptfs.conf.bak")
    # contents do not depend on the name: a copy is a valid file
    shutil.copy(cd.b("big.bin"), bak)
    fu.flip(bak, fu.block_off(cd, 2))
    v, _ = check_and_repair(cd, ONE)
    assert re.search(r'^fsck: file "/gocryptfs\.conf\.bak" .*corrupt block '
                     r'2 of 5$', v.out, re.M), v.out
    assert os.path.isfile(bak)


def test_conf_bak_with_encrypted_names(bases, tmp_path, mounter):
    """With encrypted names the backup -passwd -masterkey leaves is a name
    that does not decrypt to gocryptfs -fsck: one corrupt entry; -repair
    moves it to the quarantine (the tree is unchanged)."""
    cd = bases("veilfs", "gcm").copy(str(tmp_path / "cipher"))
    want = fu.expected(cd)
    bak = os.path.join(cd.path, "gocryptfs.conf.bak")
    shutil.copy(os.path.join(cd.path, "gocryptfs.conf"), bak)
    saved = read(bak)
    v, r = check_and_repair(cd, ONE)
    assert re.search(r'^fsck: entry in dir "/" \(ciphertext "gocryptfs\.conf'
                     r'\.bak"\): a backup of gocryptfs\.conf', v.out,
                     re.M), v.out
    assert not os.path.exists(bak)
    assert saved in fu.quarantine_files(fu.quarantine_of(r.out)).values()
    got = fu.mounted_trees(mounter, cd, util.GOCRYPTFS_BIN)
    assert fu.canonical(got) == fu.canonical(want)
