# SPDX-License-Identifier: MIT
"""-ctlsock as its users drive it: gocryptfs-xray -encrypt-paths and
-decrypt-paths (the real client) get the same answers from veilfs's socket
as from gocryptfs's own on the same cipherdir, in every name mode; raw
requests (malformed JSON, both fields, oversized input, missing paths,
names that do not decrypt) get gocryptfs's error numbers; the socket is
private (0600), goes away at unmount, and many clients at once neither
break nor block a tree being written."""

import json
import os
import shutil
import socket
import stat
import subprocess
import threading

import pytest

import util

XRAY = shutil.which("gocryptfs-xray")

MODES = {
    "gcm": ["-gcm"],
    "plaintextnames": ["-gcm", "-plaintextnames"],
    "deterministic-names": ["-gcm", "-deterministic-names"],
    "longnamemax62": ["-gcm", "-longnamemax", "62"],
}

LONG = "x" * 200
TREE_DIRS = ["a", "a/b", "a/" + LONG, "a/%s/y" % LONG, "sp ace", "\u00fc"]
TREE_FILES = ["a/b/f", "top", "sp ace/\u00e9t\u00e9", "a/%s/y/z" % LONG]

# Plaintext paths to encrypt: existing, missing last component, missing
# parent, through a file, non-canonical, empty, climbing out, too long.
ENCRYPT = ["a/b/f", "a", "a/b", "nonexist", "a/b/nonexist", "nonexist/x",
           "a/nonexist/x", "top/x", "a/%s/y/z" % LONG, "a/" + LONG,
           "/a//b/", "./a", "a/./b", "a/../b", "a/b/../../a", "..",
           "../a", "a/../..", "/", ".", "", "...", ".a", "sp ace/\u00e9t\u00e9",
           "\u00fc", "a/" + "z" * 300, "gocryptfs.conf", "a/gocryptfs.diriv"]


def _socket_path(tmp, name):
    # sun_path holds 108 bytes: keep sockets near the root of tmp
    return os.path.join(tmp, name)


def _build_tree(mnt):
    for d in TREE_DIRS:
        os.makedirs(os.path.join(mnt, d), exist_ok=True)
    for f in TREE_FILES:
        util.write_file(os.path.join(mnt, f), f.encode())


def _xray(mode, sock, lines):
    p = subprocess.run([XRAY, mode, sock],
                       input="".join(x + "\n" for x in lines).encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60 * util.SLOW)
    return (p.returncode, p.stdout.decode(errors="replace"),
            p.stderr.decode(errors="replace"))


def _same_text(err):
    """gocryptfs names the offending byte of bad base64, veilfs says "bad
    message" for every name that does not decrypt (same ErrNo, -1)."""
    out = []
    for line in err.splitlines():
        i = line.find("errno -1: illegal base64 data at input byte")
        out.append(line[:i] + "errno -1: bad message" if i >= 0 else line)
    return out


@pytest.fixture
def xray():
    if not XRAY:
        pytest.skip("gocryptfs-xray is missing") if not util.IN_CI else \
            pytest.fail("gocryptfs-xray is missing (CI=true)")
    return XRAY


def _pair(mounter, gocryptfs, flags, tmp):
    """One cipherdir with a tree, mounted by veilfs and by gocryptfs, each
    with its control socket. Returns (veilfs mount, veilfs socket,
    gocryptfs socket)."""
    cipherdir = mounter.init(flags)
    vs = _socket_path(tmp, "v.sock")
    gs = _socket_path(tmp, "g.sock")
    v = mounter.mount(cipherdir, args=["-passfile", mounter.passfile,
                                       "-ctlsock", vs])
    _build_tree(v.mnt)
    mounter.mount(cipherdir, binary=gocryptfs,
                  args=["-passfile", mounter.passfile, "-ctlsock", gs])
    return v, vs, gs


@pytest.mark.parametrize("mode", list(MODES))
def test_xray_gets_gocryptfs_answers(mounter, gocryptfs, xray, tmp_path,
                                     mode):
    v, vs, gs = _pair(mounter, gocryptfs, MODES[mode], str(tmp_path))
    enc_v = _xray("-encrypt-paths", vs, ENCRYPT)
    enc_g = _xray("-encrypt-paths", gs, ENCRYPT)
    assert enc_v[0] == enc_g[0] == 1  # some inputs fail on purpose
    assert enc_v[1] == enc_g[1]
    assert _same_text(enc_v[2]) == _same_text(enc_g[2])
    # the encrypted paths exist in the cipherdir as named
    for rel in ["a/b/f", "a/%s/y/z" % LONG, "sp ace/\u00e9t\u00e9"]:
        r = _xray("-encrypt-paths", vs, [rel])[1].strip()
        assert os.path.isfile(os.path.join(v.cipherdir, r)), (rel, r)
    # and decrypt back; plus names that are not ours
    results = enc_g[1].split()
    decrypt = results + ["bad", "gocryptfs.diriv", "AAAAAAAAAAAAAAAAAAAAAA",
                         "nonexist/AAAAAAAAAAAAAAAAAAAAAA",
                         "gocryptfs.longname.AAAA", "", "/"]
    if results:
        decrypt.append(results[0] + "/gocryptfs.longname.nosuchsidecar")
    dec_v = _xray("-decrypt-paths", vs, decrypt)
    dec_g = _xray("-decrypt-paths", gs, decrypt)
    assert (dec_v[0], dec_v[1]) == (dec_g[0], dec_g[1])
    assert _same_text(dec_v[2]) == _same_text(dec_g[2])


def _ask(sock_path, requests, timeout=10):
    """Send each request (bytes) on one connection; the answers parsed,
    None where the connection was closed instead."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout * util.SLOW)
    s.connect(sock_path)
    out = []
    try:
        for r in requests:
            try:
                s.sendall(r)
                data = s.recv(1 << 20)
            except (BrokenPipeError, ConnectionResetError):
                data = b""
            if not data:
                out.append(None)
                break
            assert data.endswith(b"\n") and data.count(b"\n") == 1, data
            out.append(json.loads(data))
    finally:
        s.close()
    return out


RAW = [
    b'{"EncryptPath": "a/b"}',
    b'{"DecryptPath": "x"}',
    b'{"EncryptPath": "a", "DecryptPath": "x"}',
    b"{garbage",
    b"{}",
    b"null",
    b"[1,2]",
    b'"x"',
    b'{"EncryptPath": 5}',
    b'{"encryptpath": "a/b/f"}',
    b'{"EncryptPath": "a/b"}{"EncryptPath": "a"}',
    b'{"EncryptPath": "nonexist/x"}',
    b'{"EncryptPath": "top/x"}',
    b'{"EncryptPath": "a\\u0000b"}',
    b'{"EncryptPath": "/a//b/"}',
    b'{"EncryptPath": "../a"}',
    b'{"EncryptPath": "a/b"}\n',
    b'{"DecryptPath": "AAAA"}',
    b'{"DecryptPath": "gocryptfs.longname.AAAA"}',
]


def test_raw_requests_get_gocryptfs_errnos(mounter, gocryptfs, tmp_path):
    _, vs, gs = _pair(mounter, gocryptfs, ["-gcm"], str(tmp_path))
    ans_v = _ask(vs, RAW)
    ans_g = _ask(gs, RAW)
    assert len(ans_v) == len(ans_g) == len(RAW)
    for req, a, b in zip(RAW, ans_v, ans_g):
        assert set(a) == {"Result", "ErrNo", "ErrText", "WarnText"}, req
        assert (a["Result"], a["ErrNo"], a["WarnText"]) == \
            (b["Result"], b["ErrNo"], b["WarnText"]), req
        if b["ErrText"].startswith("JSON Unmarshal error"):
            assert a["ErrText"].startswith("JSON Unmarshal error"), req
        elif not b["ErrText"].startswith("illegal base64"):
            assert a["ErrText"] == b["ErrText"], req
    # 4999 bytes are a request; 5000 close the connection unanswered
    for sock in (vs, gs):
        pre = b'{"EncryptPath": "a/'
        ok = pre + b"z" * (4999 - len(pre) - 2) + b'"}'
        big = pre + b"z" * (5000 - len(pre) - 2) + b'"}'
        a = _ask(sock, [ok, b'{"EncryptPath": "a"}'])
        assert a[0]["ErrText"] == "file name too long", sock
        assert a[1]["ErrNo"] == 0, sock
        assert _ask(sock, [big, b'{"EncryptPath": "a"}']) == [None], sock
        assert _ask(sock, [b'{"EncryptPath": "a"}'])[0]["ErrNo"] == 0


def test_socket_private_and_removed(mounter, tmp_path):
    cipherdir = mounter.init()
    sock = _socket_path(str(tmp_path), "s")
    m = mounter.mount(cipherdir, args=["-passfile", mounter.passfile,
                                       "-ctlsock", sock])
    st = os.lstat(sock)
    assert stat.S_ISSOCK(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o600
    mounter.unmount(m)
    assert not os.path.lexists(sock)


def test_socket_inside_the_mountpoint_stops_on_sigterm(mounter, tmp_path):
    """-ctlsock MNT/ctl.sock (made in the directory the mount then covers):
    SIGTERM unmounts, removes the socket and ends the daemon, as with
    gocryptfs. The removal went by path, through the mount nobody served
    any more: the daemon hung for good, the mount dead, and the socket
    left in the mountpoint made the next mount fail (not empty)."""
    import signal
    cipherdir = mounter.init()
    mnt = str(tmp_path / "m")
    os.makedirs(mnt)
    sock = os.path.join(mnt, "ctl.sock")
    m = mounter.mount(cipherdir, mnt=mnt,
                      args=["-passfile", mounter.passfile, "-ctlsock", sock])
    util.write_file(m.p("f"), b"x")
    m.proc.send_signal(signal.SIGTERM)
    try:
        m.returncode = m.proc.wait(timeout=30 * util.SLOW)
    except subprocess.TimeoutExpired:
        m.kill()
        pytest.fail("the daemon did not end after SIGTERM")
    assert m.returncode == 0, m.log()
    assert not os.path.ismount(mnt)
    assert os.listdir(mnt) == []
    m = mounter.mount(cipherdir, mnt=mnt)
    assert util.read_file(m.p("f")) == b"x"
    mounter.unmount(m)


def test_idle_clients_keep_no_one_out(mounter, tmp_path):
    """Clients that connect and say nothing, as many as the daemon serves
    at once (64) and more: a new client is still answered (the 65th waited
    for as long as the others stayed; gocryptfs serves them all)."""
    cipherdir = mounter.init()
    sock = _socket_path(str(tmp_path), "s")
    m = mounter.mount(cipherdir, args=["-passfile", mounter.passfile,
                                       "-ctlsock", sock])
    idle = []
    try:
        for _ in range(80):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sock)
            idle.append(s)
        a = _ask(sock, [b'{"EncryptPath": "a"}'], timeout=30)
        assert a[0]["ErrNo"] == 0 and a[0]["Result"]
    finally:
        for s in idle:
            s.close()
    mounter.unmount(m)


def test_socket_path_taken(mounter, gocryptfs, tmp_path):
    """A file in the way is refused with gocryptfs's exit code 20 and
    nothing is mounted; a stale socket (its daemon was killed) is
    replaced, where gocryptfs 2.3 refuses it too."""
    cipherdir = mounter.init()
    taken = _socket_path(str(tmp_path), "taken")
    util.write_file(taken, b"not a socket")
    mnt = str(tmp_path / "mnt-taken")
    os.makedirs(mnt)
    for binary in (util.VEILFS_BIN, gocryptfs):
        p = subprocess.run([binary, "-fg", "-passfile", mounter.passfile,
                            "-ctlsock", taken, cipherdir, mnt],
                           stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=60 * util.SLOW)
        assert p.returncode == 20, (binary, p.stderr)
        assert not os.path.ismount(mnt)
        assert util.read_file(taken) == b"not a socket"
    stale = _socket_path(str(tmp_path), "stale")
    s = socket.socket(socket.AF_UNIX)
    s.bind(stale)
    s.close()
    m = mounter.mount(cipherdir, args=["-passfile", mounter.passfile,
                                       "-ctlsock", stale])
    assert _ask(stale, [b'{"EncryptPath": "x"}'])[0]["ErrNo"] == 0
    mounter.unmount(m)
    assert not os.path.lexists(stale)


def test_relative_socket_path_daemonized(mounter, tmp_path):
    """Without -fg the daemon leaves its working directory: a relative
    -ctlsock still names the socket where the user started it, and it is
    removed at unmount."""
    cipherdir = mounter.init()
    mnt = str(tmp_path / "mnt-rel")
    os.makedirs(mnt)
    p = subprocess.run([util.VEILFS_BIN, "-passfile", mounter.passfile,
                        "-ctlsock", "rel.sock", cipherdir, mnt],
                       cwd=str(tmp_path), stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=60 * util.SLOW)
    try:
        assert p.returncode == 0, p.stderr
        sock = str(tmp_path / "rel.sock")
        a = _ask(sock, [b'{"EncryptPath": "a"}', b'{"DecryptPath": "x"}'])
        assert a[0]["ErrNo"] == 0 and a[0]["Result"]
        assert a[1]["ErrNo"] == -1
    finally:
        subprocess.run([util.FUSERMOUNT, "-u", mnt])
    assert util.wait_no_process(cipherdir) == []
    assert not os.path.lexists(str(tmp_path / "rel.sock"))


def test_concurrent_clients_while_writing(mounter, tmp_path):
    """Clients translate paths (and some misbehave: garbage, a client that
    never reads) while a tree is written; the writer finishes, every file
    reads back, every answer is right."""
    cipherdir = mounter.init()
    sock = _socket_path(str(tmp_path), "c.sock")
    m = mounter.mount(cipherdir, args=["-passfile", mounter.passfile,
                                       "-ctlsock", sock])
    ndirs, nfiles = 8, 40
    for d in range(ndirs):
        os.mkdir(m.p("d%d" % d))
    done = threading.Event()
    errors = []

    def writer():
        try:
            for i in range(nfiles):
                for d in range(ndirs):
                    util.write_file(m.p("d%d" % d, "f%d" % i),
                                    util.rand_bytes(5000 + i, d * 1000 + i))
        except Exception as e:  # reported below
            errors.append("writer: %r" % e)
        finally:
            done.set()

    def client(k):
        n = 0
        try:
            while not done.is_set() or n < 20:
                rel = "d%d/f%d" % ((n + k) % ndirs, n % nfiles)
                a = _ask(sock, [json.dumps({"EncryptPath": rel}).encode()])
                e = a[0]
                assert e["ErrNo"] == 0, (rel, e)
                b = _ask(sock, [json.dumps({"DecryptPath": e["Result"]})
                                .encode(), b"{broken"])
                assert b[0] == {"Result": rel, "ErrNo": 0, "ErrText": "",
                                "WarnText": ""}, (rel, b)
                assert b[1]["ErrNo"] == -1
                n += 1
        except Exception as e:
            errors.append("client %d: %r" % (k, e))

    # one client connects and never reads or writes
    idle = socket.socket(socket.AF_UNIX)
    idle.connect(sock)
    threads = [threading.Thread(target=writer)]
    threads += [threading.Thread(target=client, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300 * util.SLOW)
        assert not t.is_alive(), "a thread hangs"
    idle.close()
    assert not errors, errors[:5]
    for i in range(nfiles):
        for d in range(ndirs):
            assert util.read_file(m.p("d%d" % d, "f%d" % i)) == \
                util.rand_bytes(5000 + i, d * 1000 + i)
    mounter.unmount(m)
