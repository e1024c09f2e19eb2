# SPDX-License-Identifier: MIT
"""No key material in core dumps (doc/threat-model.md).

A daemon holding keys makes itself non-dumpable with a core size limit of
0: with `ulimit -c unlimited` and a core_pattern pointing into the test's
directory, SIGSEGV leaves no core. With VEILFS_COREDUMP=1 (the debugging
switch) it does leave one, and that core must hold none of the keys: not
the master key, not the EME name key, not the content key (each computed
here from the test vectors' master key with HKDF-SHA256, format §2.1), nor
either 16-byte half of them (an AES-256 key schedule starts with the key).
A marker file name listed through the mount (its directory kept open) must
be in it, which shows that the core holds the daemon's heap.

core_pattern is system-wide: it is set for the few seconds of a crash and
put back in a finally clause.
"""

import binascii
import hashlib
import hmac
import os
import resource
import signal
import time

import pytest

import util
from conftest import copy_cipherdir

INFO = {
    "gcm": (b"AES-GCM file content encryption", 32),
    "aessiv": (b"AES-SIV file content encryption", 64),
    "xchacha": (b"XChaCha20-Poly1305 file content encryption", 32),
}
CORE_PATTERN = "/proc/sys/kernel/core_pattern"


def hkdf_sha256(ikm, info, n):
    """RFC 5869 with the default salt (32 zero bytes)."""
    prk = hmac.new(b"\0" * 32, ikm, hashlib.sha256).digest()
    out, t, i = b"", b"", 1
    while len(out) < n:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        out += t
        i += 1
    return out[:n]


def secrets_of(vectors, variant):
    with open(os.path.join(vectors, variant, "masterkey.hex")) as f:
        mk = binascii.unhexlify(f.read().strip().replace("-", ""))
    info, n = INFO[variant]
    keys = {"master key": mk,
            "EME key": hkdf_sha256(mk, b"EME filename encryption", 32),
            "content key": hkdf_sha256(mk, info, n)}
    found = {}
    for name, k in keys.items():
        for off in range(0, len(k), 16):
            found["%s bytes %d-%d" % (name, off, off + 15)] = k[off:off + 16]
    return found


def use_everything(m):
    """List every directory and read every file (names and contents
    decrypted), then create a file with a random marker name and keep its
    directory open with the listing read: the daemon holds that listing
    (decrypted names) until the directory is closed, so the marker is in
    its heap at the crash whatever else it serves meanwhile. Returns the
    marker and the open directory fd."""
    for top, dirs, files in os.walk(m.mnt):
        for f in files:
            p = os.path.join(top, f)
            if os.path.isfile(p) and not os.path.islink(p):
                util.read_file(p)
    marker = os.urandom(32).hex()
    os.mkdir(m.p("marker-dir"))
    util.write_file(m.p("marker-dir", marker), b"x")
    fd = os.open(m.p("marker-dir"), os.O_RDONLY | os.O_DIRECTORY)
    assert marker in os.listdir(fd)
    return marker.encode(), fd


def crash(mounter, vectors, variant, tmp_path, env, impl=None):
    """Mount a copy of the vector filesystem, use it, SIGSEGV the daemon
    with unlimited core size; returns (core bytes or None, marker)."""
    if os.environ.get("VEILFS_SANITIZED") or util.PREFIX:
        # AddressSanitizer catches SIGSEGV itself and writes no core;
        # valgrind dumps its own
        pytest.skip("core dumps of sanitized or valgrind builds")
    cipher = copy_cipherdir(os.path.join(vectors, variant, "cipher"),
                            str(tmp_path / ("cipher-" + variant)))
    pw = os.path.join(vectors, variant, "password.txt")
    cores = tmp_path / "cores"
    cores.mkdir(exist_ok=True)
    with open(CORE_PATTERN) as f:
        old_pattern = f.read()
    old_limit = resource.getrlimit(resource.RLIMIT_CORE)
    for k, v in env.items():
        os.environ[k] = v
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY,
                                                  resource.RLIM_INFINITY))
        with open(CORE_PATTERN, "w") as f:
            f.write(str(cores / "core.%p"))
        args = ["-passfile", pw] + (["-impl", impl] if impl else [])
        m = mounter.mount(cipher, args=args)
        marker, dfd = use_everything(m)
        pid = m.proc.pid
        os.kill(pid, signal.SIGSEGV)
        try:
            assert m.proc.wait(timeout=30 * util.SLOW) == -signal.SIGSEGV
        finally:
            os.close(dfd)
        m.kill()  # the mount point is left dangling: lazy unmount
        m.returncode = -signal.SIGSEGV
        m.ok_codes = (-signal.SIGSEGV,)
        core = cores / ("core.%d" % pid)
        # the kernel writes the core while the process dies; wait for the
        # size to settle
        last = -1
        for _ in range(50):
            if not core.exists():
                time.sleep(0.1)
                continue
            size = core.stat().st_size
            if size == last:
                break
            last = size
            time.sleep(0.2)
        data = core.read_bytes() if core.exists() else None
    finally:
        with open(CORE_PATTERN, "w") as f:
            f.write(old_pattern)
        resource.setrlimit(resource.RLIMIT_CORE, old_limit)
        for k in env:
            del os.environ[k]
    return data, marker


@pytest.mark.parametrize("variant", ["gcm"])
def test_no_core_dump(mounter, vectors, variant, tmp_path):
    data, _ = crash(mounter, vectors, variant, tmp_path, {})
    assert data is None, "the daemon wrote a core dump"


IMPLS = [("gcm", "AES-GCM-256-OpenSSL"), ("gcm", "AES-GCM-256-libgcrypt"),
         ("gcm", "AES-GCM-256-VAES"), ("gcm", "AES-GCM-256-VAES-AVX2"),
         ("aessiv", "AES-SIV-512-OpenSSL"),
         ("aessiv", "AES-SIV-512-libgcrypt"),
         ("xchacha", "XChaCha20-Poly1305-OpenSSL"),
         ("xchacha", "XChaCha20-Poly1305-libgcrypt"),
         ("xchacha", "XChaCha20-Poly1305-AVX512")]
NEEDS_AVX512 = ("AES-GCM-256-VAES", "XChaCha20-Poly1305-AVX512")


def has_avx512():
    with open("/proc/cpuinfo") as f:
        flags = f.read()
    return " avx512f " in flags and " avx512ifma " in flags and \
        " vaes " in flags


def has_vaes_avx2():
    with open("/proc/cpuinfo") as f:
        flags = f.read()
    return all(" %s " % f in flags for f in ("avx2", "vaes", "vpclmulqdq"))


@pytest.mark.parametrize("variant,impl", IMPLS, ids=[i for _, i in IMPLS])
def test_no_keys_in_core_dump(mounter, vectors, variant, impl, tmp_path):
    if impl in NEEDS_AVX512 and not has_avx512():
        pytest.skip("%s needs AVX-512" % impl)
    if impl.endswith("-AVX2") and not has_vaes_avx2():
        pytest.skip("%s needs VAES and AVX2" % impl)
    data, marker = crash(mounter, vectors, variant, tmp_path,
                         {"VEILFS_COREDUMP": "1"}, impl)
    assert data is not None, "VEILFS_COREDUMP=1 left no core dump"
    assert marker in data, "the core does not hold the daemon's heap"
    leaked = [name for name, k in secrets_of(vectors, variant).items()
              if k in data]
    assert not leaked, "in the core dump: " + ", ".join(leaked)
