# SPDX-License-Identifier: MIT
"""Mounting through mount(8) and an fstab, for real: util-linux
`mount --fstab FILE` with a temporary fstab (never /etc/fstab), mount.fuse3
in between, the daemon in the background. Lines of the form gocryptfs's
man page documents mount with `mount MOUNTPOINT` and `mount -a`, noauto
lines only by name, and unmount with umount; the options mount(8) and
mount.fuse3 pass (rw, ro, dev, suid as root, noexec, nosuid, nodev from
user/users, allow_other, passfile=) give the same mount as under
gocryptfs. `fuse.veilfs` finds the binary on the PATH that mount(8) gives
its helpers (a fixed one: /usr/local/sbin first), so that test runs in a
private mount namespace with a directory holding a `veilfs` link bound
over /usr/local/sbin."""

import os
import subprocess

import pytest

import util

LINES = {
    # name: (options, mounted by mount -a)
    "issue": ("nofail,allow_other,passfile={pw}", True),
    "noauto": ("noauto,passfile={pw}", False),
    "systemd": ("ro,nofail,_netdev,x-systemd.automount,"
                "x-systemd.requires=network-online.target,passfile={pw}",
                True),
    "defaults": ("defaults,passfile={pw}", True),
    "user": ("user,passfile={pw}", True),
    "users-exec": ("users,exec,passfile={pw}", True),
    "rw-noexec": ("rw,noexec,nofail,passfile={pw}", True),
}


def _run(cmd, **kw):
    return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=120 * util.SLOW, **kw)


def _opts(mnt):
    with open("/proc/self/mounts") as f:
        for line in f:
            p = line.split()
            if p[1] == mnt:
                return p[2], [o for o in p[3].split(",")
                              if not o.startswith("max_read=")]
    return None, None


class Fstab:
    """A temporary fstab with one line per LINES entry for fstype; tears
    down whatever is still mounted and any daemon left."""

    def __init__(self, tmp, name, cipherdir, pw, fstype):
        self.dir = os.path.join(tmp, name)
        self.cipherdir = cipherdir
        self.mnts = {}
        lines = []
        for k, (opts, _) in LINES.items():
            mnt = os.path.join(self.dir, k)
            os.makedirs(mnt)
            self.mnts[k] = mnt
            lines.append("%s %s %s %s 0 0" % (cipherdir, mnt, fstype,
                                              opts.format(pw=pw)))
        self.path = os.path.join(self.dir, "fstab")
        with open(self.path, "w") as f:
            f.write("# test fstab\n" + "\n".join(lines) + "\n")

    def cleanup(self):
        for mnt in self.mnts.values():
            if _opts(mnt)[0]:
                _run(["umount", "-l", mnt])
        for pid in util.wait_no_process(self.cipherdir, timeout=10):
            os.kill(pid, 15)  # our own daemons, by pid
        util.wait_no_process(self.cipherdir)


def _mount_all(fs):
    """mount -a, then the noauto line by its mount point; returns the
    options of every mount."""
    p = _run(["mount", "-a", "--fstab", fs.path])
    assert p.returncode == 0, p.stderr
    for k, (_, auto) in LINES.items():
        assert bool(_opts(fs.mnts[k])[0]) == auto, k
    p = _run(["mount", "--fstab", fs.path, fs.mnts["noauto"]])
    assert p.returncode == 0, p.stderr
    return {k: _opts(m) for k, m in fs.mnts.items()}


def _umount_all(fs):
    for k, mnt in fs.mnts.items():
        p = _run(["umount", mnt])
        assert p.returncode == 0, (k, p.stderr)
        assert _opts(mnt)[0] is None, k
    assert util.wait_no_process(fs.cipherdir) == []


def test_fstab_mount_a_and_umount_like_gocryptfs(mounter, gocryptfs,
                                                 tmp_path):
    cipherdir = mounter.init()
    v = Fstab(str(tmp_path), "v", cipherdir, mounter.passfile,
              "fuse." + util.VEILFS_BIN)
    g = Fstab(str(tmp_path), "g", cipherdir, mounter.passfile,
              "fuse." + gocryptfs)
    try:
        vo = _mount_all(v)
        # the mounts work: write in one, read in another (same cipherdir)
        util.write_file(os.path.join(v.mnts["issue"], "f"), b"via fstab")
        assert util.read_file(os.path.join(v.mnts["defaults"], "f")) == \
            b"via fstab"
        assert util.read_file(os.path.join(v.mnts["systemd"], "f")) == \
            b"via fstab"
        with pytest.raises(OSError):
            util.write_file(os.path.join(v.mnts["systemd"], "g"), b"ro")
        _umount_all(v)
        go = _mount_all(g)
        assert util.read_file(os.path.join(g.mnts["issue"], "f")) == \
            b"via fstab"
        _umount_all(g)
    finally:
        v.cleanup()
        g.cleanup()
    for k in LINES:
        assert vo[k][0] == "fuse.veilfs", k
        assert go[k][0] == "fuse.gocryptfs", k
        assert vo[k][1] == go[k][1], (k, vo[k][1], go[k][1])
    # what mount(8) and mount.fuse3 made of the options
    assert "allow_other" in vo["issue"][1]
    assert "nosuid" not in vo["issue"][1]  # root: mount.fuse3 adds suid,dev
    assert "ro" in vo["systemd"][1]
    assert {"noexec", "nosuid", "nodev"} <= set(vo["user"][1])
    assert "noexec" not in vo["users-exec"][1]
    assert "noexec" in vo["rw-noexec"][1]


def test_fstab_type_fuse_veilfs_from_path(mounter, tmp_path):
    cipherdir = mounter.init()
    bindir = str(tmp_path / "bin")
    os.makedirs(bindir)
    os.symlink(util.VEILFS_BIN, os.path.join(bindir, "veilfs"))
    fs = Fstab(str(tmp_path), "p", cipherdir, mounter.passfile,
               "fuse.veilfs")
    issue, noauto = fs.mnts["issue"], fs.mnts["noauto"]
    script = """set -e
mount --bind {bindir} /usr/local/sbin
mount --fstab {fstab} {issue}
grep " {issue} fuse.veilfs " /proc/self/mounts
echo hello > {issue}/f
mount -a --fstab {fstab}
grep " {noauto} " /proc/self/mounts && exit 9
mount --fstab {fstab} {noauto}
cat {noauto}/f
for m in {mnts}; do umount $m; done
grep -c " {dir}/" /proc/self/mounts || true
""".format(bindir=bindir, fstab=fs.path, issue=issue, noauto=noauto,
           dir=fs.dir,
           mnts=" ".join(fs.mnts.values()))
    try:
        p = _run(["unshare", "--mount", "--propagation", "private", "sh",
                  "-c", script])
        assert p.returncode == 0, (p.stdout, p.stderr)
        out = p.stdout.decode().splitlines()
        assert out[-2] == "hello", out
        assert out[-1] == "0", out  # nothing left mounted
        assert util.wait_no_process(cipherdir) == []
    finally:
        fs.cleanup()
