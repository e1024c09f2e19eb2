# SPDX-License-Identifier: MIT
"""pytest fixtures for the integration suite (sshfs/libfuse style).

`mounter` creates cipherdirs (-init) and mounts them with -fg under Popen,
daemon output captured to a file. At teardown every mount still up is
unmounted with fusermount3 -u, the daemon must exit with code 0, and its
output is scanned for sanitizer/valgrind reports and panics. When a test
fails, the command lines to reproduce it and the daemon output are printed.

`vfs` is a ready mount of a fresh filesystem, parametrized over the three
content ciphers and plaintextnames (the gocryptfs test matrix).

Missing /dev/fuse, fusermount3, the binary under test or gocryptfs skip the
tests locally but fail them when CI=true.
"""

import faulthandler
import json
import os
import shutil
import sys
import threading

import pytest

import util

VARIANTS = {
    "gcm": ["-gcm"],  # veilfs only: dropped for gocryptfs (GCM default)
    "aessiv": ["-aessiv"],
    "xchacha": ["-xchacha"],
    "plaintextnames": ["-gcm", "-plaintextnames"],
}
CIPHER_VARIANTS = ["gcm", "aessiv", "xchacha"]
# Per-test watchdog (seconds); scaled for sanitizer/valgrind builds.
TEST_TIMEOUT = int(os.environ.get("VEILFS_TEST_TIMEOUT", 120)) * util.SLOW
# Per-block ciphertext overhead (nonce + tag), format §3.1.
OVERHEAD = {"gcm": 32, "aessiv": 32, "xchacha": 40, "plaintextnames": 32}


def _missing(what):
    msg = "%s is missing" % what
    if util.IN_CI:
        pytest.fail(msg + " (CI=true: not skipping)")
    pytest.skip(msg)


def require_fuse():
    if not os.path.exists("/dev/fuse"):
        _missing("/dev/fuse")
    if not util.FUSERMOUNT:
        _missing("fusermount3")
    if not os.access(util.VEILFS_BIN, os.X_OK):
        _missing("binary under test %s (set BUILD_DIR or VEILFS_BIN)"
                 % util.VEILFS_BIN)


def require_gocryptfs():
    if not util.GOCRYPTFS_BIN or not os.access(util.GOCRYPTFS_BIN, os.X_OK):
        _missing("gocryptfs (reference implementation)")


def require_vectors():
    if not os.path.isdir(os.path.join(util.VECTORS, "gcm")):
        _missing("test vectors in %s (set VEILFS_VECTORS)" % util.VECTORS)


def pytest_configure(config):
    # before the test modules are imported: they read VEILFS_VECTORS
    util.ensure_vectors()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


class Mounter:
    """Creates cipherdirs and mounts; owns their cleanup and checks."""

    def __init__(self, request, tmp_path):
        self.request = request
        self.tmp = str(tmp_path)
        self.mounts = []
        self.repro = []
        self.logs = []
        self.n = 0
        self.passfile = util.write_passfile(os.path.join(self.tmp,
                                                         "password"))
        self.timed_out = False
        self.watchdog = threading.Timer(TEST_TIMEOUT, self._hung)
        self.watchdog.daemon = True
        self.watchdog.start()

    def allow(self, seconds):
        """A long test: restart the watchdog with SECONDS (scaled)."""
        self.watchdog.cancel()
        self.watchdog = threading.Timer(seconds * util.SLOW, self._hung)
        self.watchdog.daemon = True
        self.watchdog.start()

    def _hung(self):
        """Watchdog: a test blocked on a hung mount would stall the whole
        suite; abort its FUSE connections so the test fails instead."""
        self.timed_out = True
        sys.stderr.write("\n*** test exceeded %ds: aborting its mounts\n"
                         % TEST_TIMEOUT)
        faulthandler.dump_traceback(file=sys.stderr)
        for m in self.mounts:
            if m.running:
                m.abort()

    def _name(self, stem):
        self.n += 1
        return os.path.join(self.tmp, "%s%d" % (stem, self.n))

    def init(self, flags=("-gcm",), binary=None, cipherdir=None):
        """-init a new cipherdir; returns its path. The default is GCM
        named explicitly, which spares veilfs its cipher benchmark."""
        binary = binary or util.VEILFS_BIN
        if util.is_gocryptfs(binary):
            # gocryptfs has no -gcm: GCM is its default
            flags = [f for f in flags if f != "-gcm"]
        cipherdir = cipherdir or self._name("cipher")
        log = self._name("init") + ".log"
        self.logs.append(log)
        cmd = util.cmd_prefix(binary) + [binary, "-init", "-scryptn", "10",
                                         *flags, "-passfile", self.passfile,
                                         cipherdir]
        self.repro.append("mkdir -p %s && %s" % (cipherdir, util.quote(cmd)))
        util.run_init(binary, cipherdir, self.passfile, flags, log=log)
        return cipherdir

    def mount(self, cipherdir, binary=None, args=None, mnt=None,
              label="", preexec=None):
        """Mount CIPHERDIR in the foreground; returns the Mount once
        ready. ARGS default to -passfile <password file>; PREEXEC runs in
        the child before exec."""
        binary = binary or util.VEILFS_BIN
        if args is None:
            args = ["-passfile", self.passfile]
        mnt = mnt or self._name("mnt")
        log = self._name("daemon") + ".log"
        self.logs.append(log)
        m = util.Mount(binary, cipherdir, mnt, args, log, label, preexec)
        self.repro.append(util.quote(m.cmd) + "   # unmount: fusermount3 -u "
                          + mnt)
        self.mounts.append(m)
        m.start()
        return m

    def unmount(self, m):
        """Unmount now and check: exit code 0, clean output."""
        rc = m.unmount()
        problems = self._check(m)
        if problems:
            pytest.fail("\n".join(problems), pytrace=False)
        assert rc in m.ok_codes

    def _check(self, m):
        problems = []
        if m.returncode is not None and m.returncode not in m.ok_codes:
            problems.append("%s exited with code %s after unmount:\n%s"
                            % (os.path.basename(m.binary), m.returncode,
                               m.log()))
        bad = util.suspicious_lines(m.log())
        if bad:
            problems.append("suspicious daemon output in %s:\n  %s"
                            % (m.log_path, "\n  ".join(bad)))
        return problems

    def cleanup(self):
        self.watchdog.cancel()
        problems = []
        if self.timed_out:
            problems.append("test exceeded %ds; its mounts were aborted"
                            % TEST_TIMEOUT)
        for m in self.mounts:
            if m.proc is None:
                continue
            if m.returncode is None:
                try:
                    m.unmount()
                except AssertionError as e:
                    problems.append(str(e) + "\n" + m.log())
                    continue
            problems += self._check(m)
        for log in self.logs:
            if log.endswith(".log") and "init" in os.path.basename(log):
                try:
                    with open(log, errors="replace") as f:
                        bad = util.suspicious_lines(f.read())
                except FileNotFoundError:
                    bad = []
                if bad:
                    problems.append("suspicious -init output:\n  "
                                    + "\n  ".join(bad))
        rep = getattr(self.request.node, "rep_call", None)
        if problems or (rep is not None and rep.failed):
            self.print_repro()
        if problems:
            pytest.fail("\n".join(problems), pytrace=False)

    def print_repro(self):
        print("\n=== to reproduce (password file holds '%s'):"
              % util.PASSWORD)
        print("printf '%s\\n' > %s" % (util.PASSWORD, self.passfile))
        for line in self.repro:
            print(line)
        print("BUILD_DIR=%s VEILFS_BIN=%s /usr/bin/python3 -m pytest "
              "%s/tests/integration -k %s"
              % (util.BUILD_DIR, util.VEILFS_BIN, util.SRC_DIR,
                 util.quote([self.request.node.name])))
        for m in self.mounts:
            print("=== daemon output %s (exit code %s):"
                  % (m.log_path, m.returncode))
            print(m.log()[-8000:])


@pytest.fixture
def mounter(request, tmp_path):
    require_fuse()
    m = Mounter(request, tmp_path)
    try:
        yield m
    finally:
        m.cleanup()


FEATURE = {"gcm": None, "aessiv": "AESSIV", "xchacha": "XChaCha20Poly1305",
           "plaintextnames": "PlaintextNames"}


def _make_vfs(mounter, variant):
    cipherdir = mounter.init(VARIANTS[variant])
    with open(os.path.join(cipherdir, "gocryptfs.conf")) as f:
        flags = json.load(f)["FeatureFlags"]
    for v, flag in FEATURE.items():
        if flag:
            assert (flag in flags) == (v == variant), (variant, flags)
    m = mounter.mount(cipherdir, label=variant)
    m.variant = variant
    m.overhead = OVERHEAD[variant]
    m.plaintextnames = variant == "plaintextnames"
    return m


@pytest.fixture(params=list(VARIANTS))
def vfs(request, mounter):
    """A freshly initialised filesystem mounted by the binary under test,
    one per variant."""
    return _make_vfs(mounter, request.param)


@pytest.fixture(params=CIPHER_VARIANTS)
def cvfs(request, mounter):
    """Like vfs, but only the three ciphers (for content-heavy tests where
    name encryption does not matter)."""
    return _make_vfs(mounter, request.param)


@pytest.fixture(params=["gcm", "aessiv", "xchacha"])
def encvfs(request, mounter):
    """Encrypted-names variants only."""
    return _make_vfs(mounter, request.param)


@pytest.fixture
def gocryptfs():
    require_gocryptfs()
    return util.GOCRYPTFS_BIN


@pytest.fixture
def vectors():
    require_vectors()
    return util.VECTORS


def copy_cipherdir(src, dst):
    """Copy a cipherdir keeping symlinks and xattrs (shutil.copy2 copies
    user.* xattrs on Linux)."""
    shutil.copytree(src, dst, symlinks=True, copy_function=shutil.copy2)
    return dst
