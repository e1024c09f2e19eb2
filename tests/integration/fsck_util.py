# SPDX-License-Identifier: MIT
"""Helpers for the fsck tests (test_fsck*.py): a known plaintext tree
written through a real mount (veilfs or gocryptfs) with the backing name of
every entry tracked as it appears, so damage can be aimed without
decrypting anything; damage injectors; runners for veilfs -fsck [-repair]
and gocryptfs -fsck; and readers of a repaired tree through a mount."""

import hashlib
import os
import stat
import subprocess

import util
from test_reliability_tamper import flip as tamper_flip

CBS = {"gcm": 4128, "aessiv": 4128, "xchacha": 4136,
       "plaintextnames": 4128, "deterministic-names": 4128,
       "longnamemax100": 4128}
NONCE = {"gcm": 16, "aessiv": 16, "xchacha": 24, "plaintextnames": 16,
         "deterministic-names": 16, "longnamemax100": 16}
OVERHEAD = {k: CBS[k] - 4096 for k in CBS}
FLAGS = {"gcm": ["-gcm"], "aessiv": ["-aessiv"], "xchacha": ["-xchacha"],
         "plaintextnames": ["-gcm", "-plaintextnames"],
         "deterministic-names": ["-gcm", "-deterministic-names"],
         "longnamemax100": ["-gcm", "-longnamemax", "100"]}
LONG = "L" * 200

# The tree, in creation order: (relpath, kind, data). Sizes sit on block
# edges; "sparse" has holes; LONG is a hashed long name.
TREE = [
    ("a.txt", "file", b"hello, a\n"),
    ("big.bin", "file", util.rand_bytes(20000, 1)),
    ("multi.bin", "file", util.rand_bytes(3 * 4096 + 100, 2)),
    ("empty", "file", b""),
    (LONG, "file", b"long name's data\n"),
    ("link", "symlink", b"a.txt"),
    ("sub", "dir", None),
    ("sub/f1", "file", b"first\n"),
    ("sub/f2", "file", util.rand_bytes(5000, 3)),
    ("sub/deeper", "dir", None),
    ("sub/deeper/f3", "file", b"third, deep\n"),
    ("sub/" + "M" * 190, "file", b"long name in sub\n"),
    ("hard.txt", "hardlink", "a.txt"),
]
XATTRS = [("a.txt", "user.foo", b"bar"), ("sub", "user.dirattr", b"dv")]
SPARSE = ("sparse", 100000, b"end\n")  # a hole, then data


def make_bases(tmp_path_factory, stem):
    """get(creator, variant): a base Cipherdir built once per module."""
    tmp = str(tmp_path_factory.mktemp(stem))
    pw = util.write_passfile(os.path.join(tmp, "password"))
    cache = {}

    def get(creator="veilfs", variant="gcm"):
        if (creator, variant) not in cache:
            binary = util.VEILFS_BIN if creator == "veilfs" else \
                util.GOCRYPTFS_BIN
            cache[creator, variant] = build(tmp, variant, binary, pw)
        return cache[creator, variant]
    return get


class Cipherdir:
    """A cipherdir with the known tree: path, variant, creator binary,
    names {relpath: backing relpath}, plain {relpath: bytes}."""

    def __init__(self, path, variant, creator, names, plain, passfile):
        self.path = path
        self.variant = variant
        self.creator = creator
        self.names = dict(names)
        self.plain = dict(plain)
        self.passfile = passfile

    def b(self, rel):
        """Backing path of plaintext relpath rel."""
        return os.path.join(self.path, self.names[rel])

    def copy(self, dst):
        # cp -a keeps hard links, symlinks, modes and xattrs
        subprocess.run(["cp", "-a", self.path, dst], check=True)
        return Cipherdir(dst, self.variant, self.creator, self.names,
                         self.plain, self.passfile)


def _new_entry(backdir, before):
    new = [n for n in set(os.listdir(backdir)) - before
           if not n.endswith(".name")]
    assert len(new) == 1, new
    return new[0]


def build(tmp, variant, creator, passfile):
    """Init a cipherdir with CREATOR, write the tree through a mount of
    the same binary, unmount; returns a Cipherdir."""
    cdir = os.path.join(tmp, "base-%s-%s" % (os.path.basename(creator),
                                             variant))
    mnt = cdir + ".mnt"
    flags = FLAGS[variant]
    if util.is_gocryptfs(creator):
        flags = [f for f in flags if f != "-gcm"]
    util.run_init(creator, cdir, passfile, flags)
    m = util.Mount(creator, cdir, mnt, ["-passfile", passfile],
                   cdir + ".log")
    m.start()
    names, plain = {"": ""}, {}
    try:
        for rel, kind, data in TREE:
            parent = os.path.dirname(rel)
            backdir = os.path.join(cdir, names[parent])
            before = set(os.listdir(backdir))
            p = m.p(rel)
            if kind == "file":
                util.write_file(p, data)
                plain[rel] = data
            elif kind == "symlink":
                os.symlink(data.decode(), p)
            elif kind == "dir":
                os.mkdir(p)
            else:
                os.link(m.p(data), p)
                plain[rel] = plain[data]
            names[rel] = os.path.join(names[parent],
                                      _new_entry(backdir, before))
        before = set(os.listdir(cdir))
        with open(m.p(SPARSE[0]), "wb") as f:
            f.seek(SPARSE[1])
            f.write(SPARSE[2])
        plain[SPARSE[0]] = b"\0" * SPARSE[1] + SPARSE[2]
        names[SPARSE[0]] = _new_entry(cdir, before)
        for rel, n, v in XATTRS:
            os.setxattr(m.p(rel), n, v)
    finally:
        rc = m.unmount()
    assert rc == 0, m.log()
    del names[""]
    return Cipherdir(cdir, variant, creator, names, plain, passfile)


# --- damage ----------------------------------------------------------------

def flip(path, off, mask=0x40):
    tamper_flip(path, off, mask)


def block_off(cd, n, inner=1000):
    """A byte inside ciphertext block n (past its nonce)."""
    v = cd.variant
    return 18 + n * CBS[v] + NONCE[v] + inner


def writable(path):
    os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) | 0o200)


def flip_xattr(path, name):
    v = bytearray(os.getxattr(path, name, follow_symlinks=False))
    v[len(v) // 2] ^= 1
    os.setxattr(path, name, bytes(v), follow_symlinks=False)


def stored_xattr(path):
    """The one user.gocryptfs.* attribute of a backing object."""
    names = [n for n in os.listxattr(path, follow_symlinks=False)
             if n.startswith("user.gocryptfs.")]
    assert len(names) == 1, names
    return names[0]


# --- running -----------------------------------------------------------------

def run(argv, env=None, timeout=120, preexec_fn=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout * util.SLOW,
                       env=e, preexec_fn=preexec_fn)
    p.out = p.stdout.decode(errors="replace")
    p.err = p.stderr.decode(errors="replace")
    bad = util.suspicious_lines(p.err)
    assert not bad, "suspicious output of %s:\n%s" % (util.quote(argv),
                                                     "\n".join(bad))
    return p


def vfsck(cd, *extra, env=None, timeout=120, preexec_fn=None):
    """veilfs -fsck [extra] on a Cipherdir (or a path)."""
    path = cd.path if isinstance(cd, Cipherdir) else cd
    pw = cd.passfile if isinstance(cd, Cipherdir) else extra[0]
    if not isinstance(cd, Cipherdir):
        extra = extra[1:]
    return run(util.cmd_prefix(util.VEILFS_BIN) +
               [util.VEILFS_BIN, "-fsck", "-passfile", pw, *extra, path],
               env=env, timeout=timeout, preexec_fn=preexec_fn)


def gfsck(cd, pw=None):
    path = cd.path if isinstance(cd, Cipherdir) else cd
    pw = pw or cd.passfile
    return run([util.GOCRYPTFS_BIN, "-fsck", "-passfile", pw, path])


def summary(text):
    lines = [line for line in text.splitlines()
             if line.startswith("fsck summary:")]
    assert len(lines) == 1, text
    return lines[0]


def problems(text):
    """veilfs's problem lines (not notes, not repair lines)."""
    return [line for line in text.splitlines()
            if line.startswith("fsck: ") and
            not line.startswith(("fsck: note:", "fsck: repair",
                                 "fsck: not repaired"))]


def quarantine_of(out):
    for line in out.splitlines():
        if line.startswith("repair summary:"):
            return line.rsplit("quarantine and report: ", 1)[1]
    raise AssertionError("no repair summary in:\n" + out)


def sha(b):
    return hashlib.sha256(b).hexdigest()


def read_tree(root):
    """{relpath: content sha256 | ("link", target) | "dir" | kind} of a
    mounted tree (from util.snapshot)."""
    out = {}
    for rel, (kind, _, _, h, _) in util.snapshot(root).items():
        out[rel] = h if kind == "file" else ("link", h) \
            if kind == "link" else kind
    return out


def mounted_trees(mounter, cd, gocryptfs_bin):
    """The tree as veilfs and as gocryptfs show it (both must agree)."""
    trees = []
    for binary in (util.VEILFS_BIN, gocryptfs_bin):
        m = mounter.mount(cd.path, binary=binary,
                          args=["-passfile", cd.passfile])
        trees.append(read_tree(m.mnt))
        xa = {}
        for rel, name, _ in XATTRS:
            try:
                xa[rel] = os.getxattr(m.p(rel), name)
            except OSError:
                xa[rel] = None
        trees[-1]["xattrs"] = xa
        mounter.unmount(m)
    assert trees[0] == trees[1], "veilfs and gocryptfs disagree"
    return trees[0]


def expected(cd):
    """The tree as a mount shows it before any damage (read_tree form,
    with contents instead of their hashes)."""
    t = {}
    for rel, kind, data in TREE:
        if kind == "dir":
            t[rel] = "dir"
        elif kind == "symlink":
            t[rel] = ("link", data.decode())
        else:
            t[rel] = cd.plain[rel]
    t[SPARSE[0]] = cd.plain[SPARSE[0]]
    t["xattrs"] = {rel: v for rel, _, v in XATTRS}
    return t


def canonical(tree):
    """Sorted (path, value) pairs with every recovered-NNNN component
    made "recovered-*": recovery numbers depend on the ciphertext names."""
    out = []
    for k, v in tree.items():
        if k == "xattrs":
            out.append((k, repr(sorted(v.items()))))
            continue
        parts = ["recovered-*" if p.startswith("recovered-") and
                 p[10:].isdigit() else p for p in k.split("/")]
        if isinstance(v, bytes):
            v = sha(v)  # expected contents; read_tree gives their hashes
        out.append(("/".join(parts), repr(v)))
    return sorted(out)


def quarantine_files(qdir):
    """{name: bytes or ("link", target)} of one quarantine run."""
    out = {}
    for n in os.listdir(qdir):
        p = os.path.join(qdir, n)
        if os.path.islink(p):
            out[n] = ("link", os.readlink(p))
        elif os.path.isfile(p):
            with open(p, "rb") as f:
                out[n] = f.read()
    return out
