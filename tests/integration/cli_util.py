# SPDX-License-Identifier: MIT
"""Helpers for the command-line tests (test_cli.py): run veilfs and the
gocryptfs reference binaries, run veilfs under a pseudo-terminal to see what
it prints only to terminals, and copy vector cipherdirs to writable places.
"""

import os
import pty
import re
import select
import shutil
import subprocess
import time

BUILD_DIR = os.environ.get("BUILD_DIR", "")
VEILFS = os.environ.get("VEILFS_BIN") or os.path.join(BUILD_DIR, "src",
                                                      "veilfs")
VECTORS = os.environ.get("VEILFS_VECTORS", "")
GOCRYPTFS = shutil.which("gocryptfs")
XRAY = shutil.which("gocryptfs-xray")
FUSERMOUNT = shutil.which("fusermount3")

FORWARD_VECTORS = ["gcm", "aessiv", "xchacha", "plaintextnames",
                   "deterministic-names", "longnamemax100"]
REVERSE_VECTORS = ["reverse", "reverse-plaintextnames"]
PASSWORD = "test"


def run(argv, stdin=None, timeout=60, env=None):
    """Run argv; returns CompletedProcess with text stdout/stderr."""
    if isinstance(stdin, str):
        stdin = stdin.encode()
    return subprocess.run(argv, input=stdin, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout, env=env)


def veilfs(*args, stdin=None, timeout=60):
    p = run([VEILFS] + list(args), stdin=stdin, timeout=timeout)
    p.out = p.stdout.decode(errors="replace")
    p.err = p.stderr.decode(errors="replace")
    return p


def gocryptfs(*args, stdin=None, timeout=60):
    p = run([GOCRYPTFS] + list(args), stdin=stdin, timeout=timeout)
    p.out = p.stdout.decode(errors="replace")
    p.err = p.stderr.decode(errors="replace")
    return p


def xray_key(conf, password):
    """gocryptfs-xray -dumpmasterkey with the password on stdin."""
    p = run([XRAY, "-dumpmasterkey", conf], stdin=password + "\n")
    assert p.returncode == 0, p.stderr
    return p.stdout.decode().strip()


def veilfs_key(cipherdir, password, *extra):
    p = veilfs("-dumpmasterkey", *extra, cipherdir, stdin=password + "\n")
    assert p.returncode == 0, p.err
    return p.out.strip()


def vector_dir(name):
    return os.path.join(VECTORS, name)


def vector_key(name):
    with open(os.path.join(vector_dir(name), "masterkey.hex")) as f:
        return f.read().strip()


def copy_vector_cipherdir(name, dst):
    """A writable copy of a vector cipherdir (config keeps mode 0400)."""
    shutil.copytree(os.path.join(vector_dir(name), "cipher"), dst,
                    symlinks=True)
    return dst


def pty_drain(master, wait=0.1):
    """What is left to read on a pseudo-terminal master."""
    out = b""
    try:
        while select.select([master], [], [], wait)[0]:
            chunk = os.read(master, 4096)
            if not chunk:
                break
            out += chunk
    except OSError:  # EIO: the child closed the terminal
        pass
    return out


def run_pty(argv, stdin_text, timeout=60):
    """Run argv with stdout (and stderr) on a pseudo-terminal and stdin on
    a pipe. Returns (exit code, everything written to the terminal)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=slave,
                         stderr=slave, close_fds=True)
    os.close(slave)
    p.stdin.write(stdin_text.encode())
    p.stdin.close()
    out = b""
    deadline = time.time() + timeout
    while time.time() < deadline:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        elif p.poll() is not None:
            out += pty_drain(master)
            break
    os.close(master)
    rc = p.wait(timeout=timeout)
    return rc, out.decode(errors="replace").replace("\r\n", "\n")


KEY_RE = re.compile(r"Your master key is:\s*\n\n"
                    r"    ([0-9a-f]{8}(?:-[0-9a-f]{8}){3})-\n"
                    r"    ([0-9a-f]{8}(?:-[0-9a-f]{8}){3})\n")


def parse_displayed_key(text):
    """The 64 hex digits of the spec §6.1 display, or None."""
    m = KEY_RE.search(text)
    if not m:
        return None
    return (m.group(1) + m.group(2)).replace("-", "")


def info_lines(text):
    """-info output without the Creator line."""
    return [l for l in text.splitlines() if not l.startswith("Creator:")]


def is_mounted(path):
    return os.path.ismount(path)


def unmount(path):
    if is_mounted(path):
        subprocess.run([FUSERMOUNT, "-u", path], check=False)
    for _ in range(100):
        if not is_mounted(path):
            return
        time.sleep(0.05)


def run_tty(argv, answers, timeout=60):
    """Run argv entirely on a pseudo-terminal (stdin too). answers is a
    list of (prompt, reply): each reply is typed once prompt has appeared.
    Returns (exit code, terminal output)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                         close_fds=True, start_new_session=True)
    os.close(slave)
    out = b""
    pending = list(answers)
    deadline = time.time() + timeout
    while time.time() < deadline:
        r, _, _ = select.select([master], [], [], 0.1)
        if r:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
            while pending and pending[0][0].encode() in out.split(
                    b"\x00")[-1]:
                prompt, reply = pending.pop(0)
                # only react to each prompt occurrence once
                out += b"\x00"
                os.write(master, reply.encode() + b"\n")
        elif p.poll() is not None:
            break
    os.close(master)
    rc = p.wait(timeout=timeout)
    text = out.replace(b"\x00", b"").decode(errors="replace")
    return rc, text.replace("\r\n", "\n")
