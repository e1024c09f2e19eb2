# SPDX-License-Identifier: MIT
"""Helpers for the integration suite: locating binaries, running -init,
starting and stopping mounts, reading daemon logs, syscall wrappers that
Python's os module lacks (renameat2, fallocate, readdir with "." and "..")
and tree snapshots used to compare a mounted filesystem with a reference
tree.

The binary under test is $VEILFS_BIN (default $BUILD_DIR/src/veilfs). Setting
VEILFS_BIN to the gocryptfs binary runs the whole suite against gocryptfs,
which is how the tests themselves are checked.
"""

import contextlib
import ctypes
import errno
import hashlib
import os
import re
import shlex
import shutil
import stat
import subprocess
import time

SRC_DIR = os.environ.get("VEILFS_SRC") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD_DIR = os.environ.get("BUILD_DIR") or os.path.join(SRC_DIR, "build")
VEILFS_BIN = os.environ.get("VEILFS_BIN") or os.path.join(
    BUILD_DIR, "src", "veilfs")
GOCRYPTFS_BIN = os.environ.get("GOCRYPTFS_BIN") or shutil.which("gocryptfs")
VECTORS = os.environ.get("VEILFS_VECTORS") or os.path.join(BUILD_DIR,
                                                            "vectors")
VECTORS_TARBALL = os.path.join(SRC_DIR, "tests", "data",
                               "gocryptfs-2.3-vectors.tar.gz")
FUSERMOUNT = shutil.which("fusermount3")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
PASSWORD = "test"


def ensure_vectors():
    """Unpack tests/data's vectors into VECTORS (extract_vectors.sh: once
    per tarball content), unless VECTORS is a tree of one's own (no stamp
    of that script beside it), and export VEILFS_VECTORS for every helper."""
    if not os.path.isdir(VECTORS) or os.path.exists(VECTORS + ".stamp"):
        subprocess.run([os.path.join(SRC_DIR, "tests", "tools",
                                     "extract_vectors.sh"),
                        VECTORS_TARBALL, VECTORS], check=True)
    os.environ["VEILFS_VECTORS"] = VECTORS


def _valgrind_prefix():
    v = os.environ.get("TEST_WITH_VALGRIND", "")
    if v.lower() in ("", "0", "false", "no"):
        return []
    if v.lower() in ("1", "true", "yes"):
        return ["valgrind", "-q", "--error-exitcode=99",
                "--leak-check=full", "--errors-for-leak-kinds=definite"]
    return shlex.split(v)


PREFIX = _valgrind_prefix()

# Sanitizer and valgrind builds are slower: scale every timeout.
SLOW = 1
if os.environ.get("VEILFS_SANITIZED"):
    SLOW = 4
if PREFIX:
    SLOW = 20


def is_gocryptfs(binary):
    return os.path.basename(binary).startswith("gocryptfs")


def cmd_prefix(binary):
    """Valgrind (or other) prefix; never applied to the Go reference."""
    return [] if is_gocryptfs(binary) else list(PREFIX)


# Suspicious daemon output (sshfs conftest style): any match fails the test.
SUSPICIOUS = [re.compile(p) for p in (
    r"ERROR: AddressSanitizer",
    r"runtime error:",
    r"LeakSanitizer",
    r"Segmentation",
    r"\bpanic\b",
    r"==\d+==\s*ERROR",
    r"Invalid (read|write|free)",
    r"definitely lost: [1-9]",
    r"uninitialised value",
    r"double free",
    r"stack smashing",
    r"buffer overflow detected",
)]


def suspicious_lines(text):
    return [line for line in text.splitlines()
            if any(p.search(line) for p in SUSPICIOUS)]


def quote(cmd):
    return " ".join(shlex.quote(str(c)) for c in cmd)


def write_passfile(path, password=PASSWORD):
    with open(path, "w") as f:
        f.write(password + "\n")
    return path


def run_init(binary, cipherdir, passfile, flags=(), log=None):
    """Run BINARY -init; returns (command, output). Raises on failure."""
    os.makedirs(cipherdir, exist_ok=True)
    cmd = cmd_prefix(binary) + [binary, "-init", "-scryptn", "10", *flags,
                                "-passfile", passfile, cipherdir]
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=60 * SLOW)
    out = p.stdout.decode(errors="replace")
    if log is not None:
        with open(log, "a") as f:
            f.write("$ " + quote(cmd) + "\n" + out)
    if p.returncode != 0:
        raise AssertionError("init failed with exit code %d: %s\n%s"
                             % (p.returncode, quote(cmd), out))
    return cmd, out


class Mount:
    """One mounted filesystem. Started with -fg under Popen; the daemon's
    stdout and stderr go to log_path."""

    def __init__(self, binary, cipherdir, mnt, args, log_path, label="",
                 preexec=None):
        self.binary = binary
        self.preexec = preexec  # run in the child before exec (Popen)
        self.cipherdir = cipherdir
        self.mnt = mnt
        self.args = list(args)
        self.log_path = log_path
        self.label = label
        self.proc = None
        self.returncode = None
        self.ok_codes = (0,)  # exit codes accepted at teardown
        self.cmd = cmd_prefix(binary) + [binary, "-fg", *self.args,
                                         cipherdir, mnt]

    def p(self, *names):
        """Path inside the mount."""
        return os.path.join(self.mnt, *names)

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def start(self, timeout=None):
        os.makedirs(self.mnt, exist_ok=True)
        logf = open(self.log_path, "ab")
        logf.write(("$ " + quote(self.cmd) + "\n").encode())
        logf.flush()
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL,
                                     stdout=logf, stderr=subprocess.STDOUT,
                                     preexec_fn=self.preexec)
        logf.close()
        wait_mounted(self.mnt, self.proc, self.log, timeout,
                     is_gocryptfs(self.binary) and "-q" not in self.args)
        self.dev = os.stat(self.mnt).st_dev
        return self

    def abort(self):
        """Hung filesystem: abort the FUSE connection (fusectl), so
        blocked requests fail with ENOTCONN, then kill the daemon."""
        conns = "/sys/fs/fuse/connections"
        if not os.listdir(conns) and os.getuid() == 0:
            subprocess.run(["mount", "-t", "fusectl", "none", conns],
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        dev = getattr(self, "dev", None)
        if dev is not None:
            try:
                with open("%s/%d/abort" % (conns, os.minor(dev)), "w") as f:
                    f.write("1")
            except OSError:
                pass
        self.kill()

    def unmount(self, timeout=None):
        """fusermount3 -u, then wait for the daemon; returns its exit
        code. On a stuck daemon: lazy unmount, kill it, raise."""
        timeout = timeout or 30 * SLOW
        if self.proc.poll() is not None:
            self.returncode = self.proc.returncode
            self.kill()
            raise AssertionError("daemon died during the test (exit code "
                                 "%d)" % self.returncode)
        p = subprocess.run([FUSERMOUNT, "-u", self.mnt],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if p.returncode != 0:
            msg = p.stdout.decode(errors="replace")
            self.kill()
            raise AssertionError("fusermount3 -u %s failed: %s"
                                 % (self.mnt, msg))
        try:
            self.returncode = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("daemon did not exit within %ds after "
                                 "unmount" % timeout)
        return self.returncode

    def kill(self):
        """Emergency cleanup: lazy unmount and kill our own daemon."""
        subprocess.run([FUSERMOUNT, "-u", "-z", self.mnt],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.returncode = self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None


# gocryptfs -fg mounts before it is ready, and a request sent in that
# window can deadlock with its start-up self-check: wait for this line.
GOCRYPTFS_READY = "Filesystem mounted and ready."


def wait_mounted(mnt, proc, logfn, timeout=None, gocryptfs=False):
    """Wait until MNT is a mount point; fail with the daemon output if the
    process exits first (or the wait times out). For the gocryptfs
    reference, also wait for its ready line."""
    timeout = timeout or 20 * SLOW
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and proc.poll() is not None:
            raise AssertionError("daemon exited with code %d before the "
                                 "mount was ready:\n%s"
                                 % (proc.returncode, logfn()))
        if os.path.ismount(mnt) and (
                not gocryptfs or GOCRYPTFS_READY in logfn()):
            return
        if time.monotonic() > deadline:
            raise AssertionError("mount not ready after %ds:\n%s"
                                 % (timeout, logfn()))
        time.sleep(0.02)


def pids_with_arg(path):
    """PIDs of processes (other than us) with PATH as a command-line
    argument. Used to check that no daemon is left behind."""
    want = os.fsencode(os.path.abspath(path))
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if any(a.rstrip(b"/") == want.rstrip(b"/") for a in args):
            pids.append(int(d))
    return pids


def wait_no_process(path, timeout=None):
    timeout = timeout or 10 * SLOW
    deadline = time.monotonic() + timeout
    while pids_with_arg(path):
        if time.monotonic() > deadline:
            return pids_with_arg(path)
        time.sleep(0.05)
    return []


# --- syscall wrappers -----------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02
FALLOC_FL_COLLAPSE_RANGE = 0x08
FALLOC_FL_ZERO_RANGE = 0x10
FALLOC_FL_INSERT_RANGE = 0x20
AT_FDCWD = -100

_libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int,
                            ctypes.c_char_p, ctypes.c_uint]
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                            ctypes.c_int64]


def renameat2(old, new, flags):
    rc = _libc.renameat2(AT_FDCWD, os.fsencode(old), AT_FDCWD,
                         os.fsencode(new), flags)
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), old)


def fallocate(fd, mode, offset, length):
    rc = _libc.fallocate(fd, mode, offset, length)
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


class _Dirent(ctypes.Structure):
    """struct dirent of glibc on 64-bit Linux."""
    _fields_ = [("d_ino", ctypes.c_uint64), ("d_off", ctypes.c_int64),
                ("d_reclen", ctypes.c_ushort), ("d_type", ctypes.c_ubyte),
                ("d_name", ctypes.c_char * 256)]


_libc.opendir.argtypes = [ctypes.c_char_p]
_libc.opendir.restype = ctypes.c_void_p
_libc.readdir.argtypes = [ctypes.c_void_p]
_libc.readdir.restype = ctypes.POINTER(_Dirent)
_libc.closedir.argtypes = [ctypes.c_void_p]


def readdir_raw(path):
    """{name: (d_ino, d_type)} of every entry readdir(3) returns for PATH,
    "." and ".." included (os.scandir leaves them out)."""
    d = _libc.opendir(os.fsencode(path))
    if not d:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), path)
    out = {}
    try:
        while True:
            ctypes.set_errno(0)
            ent = _libc.readdir(d)
            if not ent:
                e = ctypes.get_errno()
                if e:
                    raise OSError(e, os.strerror(e), path)
                return out
            out[os.fsdecode(ent.contents.d_name)] = (ent.contents.d_ino,
                                                     ent.contents.d_type)
    finally:
        _libc.closedir(d)


# --- file helpers ---------------------------------------------------------

def write_file(path, data, mode=0o644):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def pread_all(path, offset, length):
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.pread(fd, length, offset)
    finally:
        os.close(fd)


def rand_bytes(n, seed):
    """Deterministic pseudo-random bytes (fast, reproducible failures)."""
    out = bytearray()
    ctr = 0
    while len(out) < n:
        out += hashlib.sha256(b"%d:%d" % (seed, ctr)).digest() * 64
        ctr += 1
    return bytes(out[:n])


def expect_errno(err, fn, *args, **kw):
    """Call fn and require OSError with errno ERR (or one of a tuple)."""
    errs = err if isinstance(err, tuple) else (err,)
    try:
        fn(*args, **kw)
    except OSError as e:
        assert e.errno in errs, "expected %s, got %s (%s)" % (
            "/".join(errno.errorcode[x] for x in errs),
            errno.errorcode.get(e.errno, e.errno), e)
        return e
    raise AssertionError("expected %s, call succeeded" % "/".join(
        errno.errorcode[x] for x in errs))


# --- backing-directory helpers ---------------------------------------------

HIDDEN_ROOT = {"gocryptfs.conf", "gocryptfs.diriv"}


def backing_entries(cipherdir, sub=""):
    """Backing entries of a cipherdir directory, minus config/IV files."""
    d = os.path.join(cipherdir, sub)
    return sorted(n for n in os.listdir(d) if n not in HIDDEN_ROOT)


def only_backing_file(cipherdir):
    """The path of the single data file in CIPHERDIR's root (tests create
    exactly one file so it can be found without decrypting names)."""
    names = [n for n in backing_entries(cipherdir)
             if not n.endswith(".name")]
    assert len(names) == 1, "expected one backing file, have %r" % names
    return os.path.join(cipherdir, names[0])


def cipher_size(plain, overhead):
    """Ciphertext size of a PLAIN-byte file (format §3.8)."""
    if plain == 0:
        return 0
    return 18 + plain + overhead * ((plain + 4095) // 4096)


def plain_size(csize, overhead):
    """Plaintext size of a CSIZE-byte ciphertext file (cipher_size's
    inverse)."""
    if csize == 0:
        return 0
    body = csize - 18
    return body - overhead * ((body + 4095 + overhead) // (4096 + overhead))


# --- tree snapshots --------------------------------------------------------

def _xattrs(path):
    out = {}
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError as e:
        if e.errno in (errno.ENOTSUP, errno.EPERM):
            return out
        raise
    for n in names:
        if n.startswith("user."):
            out[n] = os.getxattr(path, n, follow_symlinks=False)
    return out


def snapshot(root, hashes=True):
    """{relpath: (kind, perms, size, content-hash/target, xattrs)} of every
    entry under ROOT (not following symlinks)."""
    snap = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            perms = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                entry = ("link", None, st.st_size, os.readlink(path), {})
            elif stat.S_ISDIR(st.st_mode):
                entry = ("dir", perms, None, None, _xattrs(path))
            elif stat.S_ISREG(st.st_mode):
                h = None
                if hashes:
                    h = hashlib.sha256(read_file(path)).hexdigest()
                entry = ("file", perms, st.st_size, h, _xattrs(path))
            elif stat.S_ISFIFO(st.st_mode):
                entry = ("fifo", perms, None, None, {})
            elif stat.S_ISSOCK(st.st_mode):
                entry = ("sock", perms, None, None, {})
            else:
                entry = ("other", st.st_mode, None, None, {})
            snap[rel] = entry
    return snap


def diff_snapshots(got, want):
    """Human-readable differences (empty list when equal)."""
    out = []
    for k in sorted(set(got) | set(want)):
        short = k if len(k) < 60 else k[:28] + "..." + k[-28:]
        if k not in got:
            out.append("missing: %s" % short)
        elif k not in want:
            out.append("unexpected: %s" % short)
        elif got[k] != want[k]:
            out.append("differs: %s: got %r want %r" % (short, got[k],
                                                          want[k]))
    return out


def ls_xattr_requests(m, path):
    """The xattr requests that reach the daemon of Mount m (mounted with
    -fusedebug) while `ls -lR path` runs."""
    def count():
        log = m.log()
        return log.count("opcode: GETXATTR") + log.count("opcode: LISTXATTR")
    before = count()
    p = subprocess.run(["ls", "-lR", path], capture_output=True,
                       timeout=60 * SLOW)
    assert p.returncode == 0, p.stderr
    return count() - before


@contextlib.contextmanager
def ext4(parent, size, block=None):
    """An ext4 filesystem of SIZE bytes in an image file on PARENT, loop
    mounted on PARENT/ext4 (mode 0700) and unmounted at the end: a disk
    with delayed allocation and a journal, unlike tmpfs. BLOCK sets the
    block size (mkfs picks 1 KiB below 512 MiB, in 8 MiB groups). Needs
    root and mkfs.ext4 (e2fsprogs): skips the test otherwise."""
    import pytest
    if os.geteuid() != 0:
        pytest.skip("needs root to mount an ext4 image")
    if not shutil.which("mkfs.ext4"):
        pytest.skip("no mkfs.ext4 (e2fsprogs)")
    img = os.path.join(str(parent), "ext4.img")
    d = os.path.join(str(parent), "ext4")
    os.mkdir(d)
    with open(img, "wb") as f:
        f.truncate(size)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0"] +
                   (["-b", str(block)] if block else []) + [img], check=True)
    r = subprocess.run(["mount", "-o", "loop", img, d],
                       stderr=subprocess.PIPE, text=True)
    if r.returncode:
        pytest.skip("cannot loop-mount an ext4 image: %s" % r.stderr.strip())
    try:
        os.chmod(d, 0o700)
        yield d
    finally:
        subprocess.run(["umount", "-l", d])


def cachestat(path):
    """The page-cache state of path's whole file (cachestat(2), Linux 6.5):
    pages cached, dirty, under writeback, evicted, recently evicted; None
    where the kernel has no cachestat."""
    import ctypes

    class Range(ctypes.Structure):
        _fields_ = [('off', ctypes.c_uint64), ('len', ctypes.c_uint64)]

    names = ('cache', 'dirty', 'writeback', 'evicted', 'recently_evicted')

    class Stat(ctypes.Structure):
        _fields_ = [(n, ctypes.c_uint64) for n in names]

    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        r, st = Range(0, 0), Stat()
        if libc.syscall(451, fd, ctypes.byref(r), ctypes.byref(st), 0):
            return None
        return {n: getattr(st, n) for n in names}
    finally:
        os.close(fd)


@contextlib.contextmanager
def tmpfs(parent, size):
    """A tmpfs of SIZE (mount's syntax, e.g. "8m") on PARENT/tmpfs, mode
    0700, lazily unmounted at the end. Needs root: skips the test
    otherwise."""
    import pytest
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    d = os.path.join(str(parent), "tmpfs")
    os.mkdir(d)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0700" % size,
                    "tmpfs", d], check=True)
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", d])


IN_ACCESS, IN_OPEN = 0x1, 0x20


def open_watch(path, mask=IN_OPEN):
    """An inotify fd that records every open of path (IN_OPEN; or the
    events of mask, such as IN_ACCESS, which a read of a file or a listing
    of a directory makes); read it with was_opened. For checks that
    something is never opened (a device node's open can act) or read."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    ifd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    assert ifd >= 0
    assert libc.inotify_add_watch(ifd, path.encode(), mask) >= 0
    return ifd


def was_opened(ifd, mask=IN_OPEN):
    """Whether an event of mask (IN_OPEN) came on ifd since the last call
    (others, such as IN_IGNORED when the watched file is deleted, do not
    count)."""
    import struct
    try:
        buf = os.read(ifd, 65536)
    except BlockingIOError:
        return False
    off, seen = 0, False
    while off + 16 <= len(buf):
        _, m, _, ln = struct.unpack_from("iIII", buf, off)
        seen = seen or bool(m & mask)
        off += 16 + ln
    return seen
