# SPDX-License-Identifier: MIT
"""Helpers for the reliability and security tests (test_reliability_*.py).

A small, self-contained mount harness: -init a CIPHERDIR with a fast scrypt
cost, run the daemon in the foreground with its output in a log file, wait
for the mount, unmount with fusermount3 and require a clean exit. It also
kills the daemon with SIGKILL (crash tests) and scans the daemon log for
sanitizer reports.

Environment:
  BUILD_DIR        meson build directory (veilfs at src/veilfs, tools in
                   tests/tools)
  VEILFS_BIN       override the binary (e.g. `gocryptfs`, to validate the
                   harness against the reference implementation)
  VEILFS_INIT_BIN  binary used for -init only (default: VEILFS_BIN)
  VEILFS_FSX_OPS   fsx operations per cipher (default 20000, 4000 when
                   VEILFS_SANITIZED is set)
  VEILFS_LONG      run the long-stage tests (see long_stage)
  VEILFS_SEED      base seed for the random tests (default: random, printed)
"""
import os
import random
import shutil
import signal
import subprocess
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BUILD_DIR = os.environ.get('BUILD_DIR', os.path.join(ROOT, 'build'))
VEILFS = os.environ.get('VEILFS_BIN') or os.path.join(BUILD_DIR, 'src',
                                                      'veilfs')
# -init with another binary (e.g. gocryptfs): the mount is still veilfs
VEILFS_INIT = os.environ.get('VEILFS_INIT_BIN') or VEILFS
TOOLS = os.path.join(BUILD_DIR, 'tests', 'tools')
VECTORS = os.environ.get('VEILFS_VECTORS',
                         os.path.join(BUILD_DIR, 'vectors'))
PASSWORD = b'reliab-test-password'

# cipher name -> -init flags
CIPHERS = {'gcm': [], 'aessiv': ['-aessiv'], 'xchacha': ['-xchacha']}

SANITIZER_MARKERS = ('ERROR: AddressSanitizer', 'ERROR: LeakSanitizer',
                     'runtime error:', 'WARNING: ThreadSanitizer',
                     'Sanitizer:DEADLYSIGNAL')


# The "long" stage: tests marked with this run only with VEILFS_LONG=1
# (e.g. VEILFS_LONG=1 pytest -k long tests/integration), never in the
# default suite, which runs twice in CI (gcc and ASan).
long_stage = pytest.mark.skipif(not os.environ.get('VEILFS_LONG'),
                                reason='long stage (set VEILFS_LONG=1)')


def tool(name):
    path = os.path.join(TOOLS, name)
    if not os.access(path, os.X_OK):
        raise AssertionError('test tool %s not built (ninja -C %s)'
                             % (path, BUILD_DIR))
    return path


def base_seed():
    s = os.environ.get('VEILFS_SEED')
    if s:
        return int(s, 0)
    return random.SystemRandom().randrange(1, 2**31)


def fsx_ops(default=20000):
    """20000 by default; 4000 in the sanitizer stage (VEILFS_SANITIZED=1,
    set by .ci/run), unless VEILFS_FSX_OPS says otherwise."""
    if os.environ.get('VEILFS_SANITIZED'):
        default = 4000
    return int(os.environ.get('VEILFS_FSX_OPS', default))


def check_env():
    """Fail loudly (not skip) when FUSE is unusable."""
    assert os.path.exists('/dev/fuse'), '/dev/fuse missing'
    assert shutil.which('fusermount3'), 'fusermount3 missing'
    assert os.access(VEILFS, os.X_OK) or shutil.which(VEILFS), \
        'veilfs binary %s not found' % VEILFS


def write_passfile(path):
    with open(path, 'wb') as f:
        f.write(PASSWORD + b'\n')
    return path


def init_cipherdir(cipherdir, passfile, flags=()):
    os.makedirs(cipherdir, exist_ok=True)
    cmd = [VEILFS_INIT, '-init', '-q', '-scryptn', '10', '-passfile', passfile]
    cmd += list(flags) + [cipherdir]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=60)
    assert r.returncode == 0, 'init failed (%d): %s\n%s' % (
        r.returncode, ' '.join(cmd), r.stdout.decode(errors='replace'))


class Mount:
    """One foreground daemon serving cipherdir on mnt."""

    def __init__(self, cipherdir, mnt, passfile, args=(), logpath=None):
        self.cipherdir = cipherdir
        self.mnt = mnt
        self.passfile = passfile
        self.args = list(args)
        self.logpath = logpath or mnt.rstrip('/') + '.log'
        self.proc = None
        self.logs = []  # text of previous runs of this Mount
        self.env = {}   # added to the daemon's environment

    def cmdline(self):
        return [VEILFS, '-fg', '-passfile', self.passfile] + self.args + \
            [self.cipherdir, self.mnt]

    def start(self, timeout=20):
        os.makedirs(self.mnt, exist_ok=True)
        self.logf = open(self.logpath, 'ab')
        env = dict(os.environ, **self.env) if self.env else None
        self.proc = subprocess.Popen(self.cmdline(), stdin=subprocess.DEVNULL,
                                     stdout=self.logf,
                                     stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if os.path.ismount(self.mnt):
                return self
            if self.proc.poll() is not None:
                raise AssertionError('daemon exited with %d before mounting: '
                                     '%s\n%s' % (self.proc.returncode,
                                                 ' '.join(self.cmdline()),
                                                 self.log()))
            time.sleep(0.02)
        self.kill()
        raise AssertionError('mount did not appear within %ds: %s\n%s' % (
            timeout, ' '.join(self.cmdline()), self.log()))

    def log(self):
        try:
            with open(self.logpath, 'rb') as f:
                return f.read().decode(errors='replace')
        except FileNotFoundError:
            return ''

    def check_log_clean(self):
        text = self.log()
        for m in SANITIZER_MARKERS:
            assert m not in text, 'sanitizer report in daemon log:\n' + text

    def stop(self, check=True):
        """Unmount and require exit code 0 and a clean log."""
        if self.proc is None:
            return
        r = subprocess.run(['fusermount3', '-u', self.mnt],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            # busy: retry for a moment, then lazily
            for _ in range(50):
                time.sleep(0.1)
                r = subprocess.run(['fusermount3', '-u', self.mnt],
                                   stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT)
                if r.returncode == 0:
                    break
            else:
                subprocess.run(['fusermount3', '-u', '-z', self.mnt])
        try:
            rc = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.proc = None
        self.logf.close()
        if check:
            assert rc == 0, 'daemon exit code %d\n%s' % (rc, self.log())
            self.check_log_clean()
        return rc

    def kill(self, umount=True):
        """SIGKILL the daemon (a crash); then clean up the dead mount
        unless umount is False (call umount_dead() later)."""
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None
        self.logf.close()
        if umount:
            self.umount_dead()

    def umount_dead(self):
        """fusermount3 -u after a crash; lazily if something still holds
        the dead mount. Returns the plain fusermount3 exit code."""
        r = subprocess.run(['fusermount3', '-u', self.mnt],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            subprocess.run(['fusermount3', '-u', '-z', self.mnt],
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        return r.returncode

    def restart(self):
        self.stop()
        return self.start()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        if self.proc is not None:
            self.stop(check=exc[0] is None)


def new_fs(tmp_path, cipher='gcm', init_flags=(), mount_args=(),
           name='fs', cipherdir=None):
    """-init a fresh CIPHERDIR under tmp_path; return an unstarted Mount."""
    check_env()
    tmp = str(tmp_path)
    passfile = write_passfile(os.path.join(tmp, name + '.pw'))
    cdir = cipherdir or os.path.join(tmp, name + '.cipher')
    init_cipherdir(cdir, passfile, CIPHERS[cipher] + list(init_flags))
    return Mount(cdir, os.path.join(tmp, name + '.mnt'), passfile,
                 args=mount_args)


def cipher_entries(d):
    """Entries of a ciphertext directory that hold user data."""
    return sorted(e for e in os.listdir(d)
                  if e not in ('gocryptfs.conf', 'gocryptfs.diriv')
                  and not e.endswith('.name'))


def pattern(seed, n):
    """Deterministic pseudo-random bytes (no zeros), fast for MiB sizes."""
    r = random.Random(seed)
    block = bytes(r.randrange(1, 256) for _ in range(4099))
    out = (block * (n // len(block) + 1))[:n]
    return out


def read_file(path):
    with open(path, 'rb') as f:
        return f.read()
