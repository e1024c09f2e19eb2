# SPDX-License-Identifier: MIT
"""Mount options a gocryptfs user types that other files do not cover:
-nonempty, -fsname, -o passed to FUSE, and default_permissions tied to
-allow_other. Each is checked where a user would see it: /proc/self/mounts
and the exit code."""

import os
import subprocess

import util


def mount_entry(mnt):
    """The /proc/self/mounts line of MNT as (source, fstype, options)."""
    with open("/proc/self/mounts") as f:
        for line in f:
            src, where, fstype, opts = line.split()[:4]
            if where == mnt:
                return src, fstype, opts.split(",")
    raise AssertionError("%s is not in /proc/self/mounts" % mnt)


def test_nonempty_mountpoint_refused_then_allowed(mounter, tmp_path):
    cipher = mounter.init()
    mnt = str(tmp_path / "busy")
    os.makedirs(mnt)
    util.write_file(os.path.join(mnt, "already-here"), b"x")
    p = subprocess.run([util.VEILFS_BIN, "-fg", "-passfile", mounter.passfile,
                        cipher, mnt], stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=60 * util.SLOW)
    assert p.returncode == 10, p.stderr
    assert b"not empty" in p.stderr
    assert not os.path.ismount(mnt)
    m = mounter.mount(cipher, args=["-passfile", mounter.passfile,
                                    "-nonempty"], mnt=mnt)
    assert os.path.ismount(mnt)
    assert os.listdir(m.mnt) == []  # the veilfs view hides the old file
    mounter.unmount(m)
    assert os.listdir(mnt) == ["already-here"]


def test_fsname_and_fuse_options(mounter):
    cipher = mounter.init()
    m = mounter.mount(cipher, args=["-passfile", mounter.passfile,
                                    "-fsname", "my-secret-store",
                                    "-o", "noatime"])
    src, fstype, opts = mount_entry(m.mnt)
    assert src == "my-secret-store"
    assert fstype == "fuse.veilfs"
    assert "noatime" in opts
    mounter.unmount(m)


def test_default_fsname_is_cipherdir(mounter):
    cipher = mounter.init()
    m = mounter.mount(cipher)
    src, _, opts = mount_entry(m.mnt)
    assert src == cipher
    # without -allow_other only the mounting user gets in, and the backing
    # filesystem checks its accesses: no default_permissions round trips
    assert "default_permissions" not in opts
    assert "allow_other" not in opts
    mounter.unmount(m)


def test_allow_other_implies_default_permissions(mounter):
    cipher = mounter.init()
    m = mounter.mount(cipher, args=["-passfile", mounter.passfile,
                                    "-allow_other"])
    _, _, opts = mount_entry(m.mnt)
    assert "allow_other" in opts and "default_permissions" in opts
    mounter.unmount(m)


def test_a_users_max_read_is_kept(mounter):
    """-o max_read=4096 (a kernel option, passed on) mounts with that
    max_read, and data goes through it (the forward mount
    answered FUSE INIT with its own 1 MiB, which libfuse refused: the
    mount failed after the ready line, and without -fg with exit 0)."""
    data = os.urandom(100000)
    cd = mounter.init()
    m = mounter.mount(cd, args=["-passfile", mounter.passfile,
                                "-o", "max_read=4096"])
    with open("/proc/mounts") as f:
        line = [x for x in f if x.split()[1] == m.mnt][0]
    assert "max_read=4096" in line.split()[3].split(",")
    util.write_file(m.p("f"), data)
    assert util.read_file(m.p("f")) == data
    mounter.unmount(m)
