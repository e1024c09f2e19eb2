#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Network and distributed backings for the tests and for bench/netbackings.

- SshfsBacking: a dedicated sshd on 127.0.0.1 (its own config file, a free
  port, host and client keys generated into the work directory; neither the
  machine's sshd nor ~/.ssh is used) and N sshfs client mounts of one
  exported directory.
- MooseFsBacking: a one-node MooseFS (mfsmaster + mfschunkserver, config
  and data in the work directory) in a network namespace made for it
  (MooseFS refuses 127.0.0.0/8, so it listens on an address of that
  namespace's loopback device: nothing can leave it), and N mfsmount
  clients started with `nsenter --net` only, so that their FUSE mounts are
  visible in our mount namespace.

Every daemon runs in the foreground as our child; stop() unmounts the
clients and stops the daemons (also after a partial start), and removes
the namespace. A backing that cannot start raises Unavailable with the
reason. `cache=False` mounts the clients without attribute and entry
caching, as mounts of one directory that must see each other's changes
need (see the NETWORK AND SHARED STORAGE section of veilfs(1)).

Command line (the state lives in DIR/netback.json):
  netback.py start sshfs|moosefs DIR [--clients N] [--nocache]
      prints one client mount point a line
  netback.py stop DIR
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid

SSHD = "/usr/sbin/sshd"
MFS_ADDR = "10.217.0.1"  # on the loopback device of our own namespace
STATE = "netback.json"


class Unavailable(Exception):
    """The backing cannot start here. env_limit: a limit of the machine
    (no /dev/fuse, no permission for a network namespace), not a missing
    package."""

    def __init__(self, msg, env_limit=False):
        super().__init__(msg)
        self.env_limit = env_limit


def _which(name, path=None):
    p = path or shutil.which(name)
    if not p or not os.access(p, os.X_OK):
        raise Unavailable("%s is not installed (scripts/deps.sh)" % name)
    return p


def _wait(cond, what, timeout, proc=None, logf=None):
    deadline = time.monotonic() + timeout
    while not cond():
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("%s: process exited with code %d%s"
                               % (what, proc.returncode, _tail(logf)))
        if time.monotonic() > deadline:
            raise RuntimeError("%s: not ready after %ds%s"
                               % (what, timeout, _tail(logf)))
        time.sleep(0.05)


def _tail(path):
    if not path:
        return ""
    try:
        with open(path, errors="replace") as f:
            return ":\n" + f.read()[-3000:]
    except OSError:
        return ""


def _stop_proc(proc, sig=signal.SIGTERM, timeout=20):
    """Stop one of our children: SIGTERM, then SIGKILL."""
    if proc is None or proc.poll() is not None:
        return
    try:
        proc.send_signal(sig)
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def _stop_pid(pid, timeout=20):
    """Stop a process of an earlier run of the command line by its id."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _unmount(mnt):
    if os.path.ismount(mnt):
        p = subprocess.run(["fusermount3", "-u", mnt],
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        if p.returncode != 0:
            subprocess.run(["fusermount3", "-u", "-z", mnt],
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)


class Backing:
    kind = None

    def __init__(self, work, clients=1, cache=True):
        self.work = os.path.abspath(work)
        self.nclients = clients
        self.cache = cache
        self.clients = []  # client mount points
        self.procs = []    # (name, Popen), started in this order
        self.pids = {}     # name -> pid (for the command line's stop)
        self.extra = {}

    def _spawn(self, name, cmd, log):
        logf = open(log, "ab")
        logf.write(("$ " + " ".join(cmd) + "\n").encode())
        logf.flush()
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf,
                             stderr=subprocess.STDOUT,
                             start_new_session=True)
        logf.close()
        self.procs.append((name, p))
        self.pids[name] = p.pid
        return p

    def _mount_client(self, i, cmd):
        mnt = os.path.join(self.work, "client%d" % i)
        os.makedirs(mnt, exist_ok=True)
        log = os.path.join(self.work, "client%d.log" % i)
        p = self._spawn("client%d" % i,
                        [mnt if c == "@MNT" else c for c in cmd], log)
        self.clients.append(mnt)
        _wait(lambda: os.path.ismount(mnt), "%s client %d" % (self.kind, i),
              30, p, log)
        return mnt

    def start(self):
        os.makedirs(self.work, exist_ok=True)
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        self.save()
        return self

    def save(self):
        with open(os.path.join(self.work, STATE), "w") as f:
            json.dump({"kind": self.kind, "clients": self.clients,
                       "pids": self.pids, "extra": self.extra}, f)

    def stop(self):
        """Unmount the clients, stop the daemons (last started first).
        Returns the problems seen (empty when all went well)."""
        problems = []
        for mnt in self.clients:
            _unmount(mnt)
        for name, p in reversed(self.procs):
            _stop_proc(p)
        for mnt in self.clients:
            if os.path.ismount(mnt):
                problems.append("%s still mounted" % mnt)
        self._stop_extra()
        self.procs = []
        return problems

    def _stop_extra(self):
        pass

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class SshfsBacking(Backing):
    kind = "sshfs"

    def _start(self):
        _which("sshd", SSHD)
        _which("ssh-keygen")
        sshfs = _which("sshfs")
        if not os.path.exists("/dev/fuse"):
            raise Unavailable("/dev/fuse is missing", env_limit=True)
        w = self.work
        os.chmod(w, 0o700)
        export = os.path.join(w, "export")
        os.makedirs(export, exist_ok=True)
        for key in ("host_key", "client_key"):
            path = os.path.join(w, key)
            if not os.path.exists(path):
                subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N",
                                "", "-C", "veilfs-test", "-f", path],
                               check=True, stdin=subprocess.DEVNULL)
        shutil.copy(os.path.join(w, "client_key.pub"),
                    os.path.join(w, "authorized_keys"))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        cfg = os.path.join(w, "sshd_config")
        with open(cfg, "w") as f:
            f.write("ListenAddress 127.0.0.1\nPort %d\n"
                    "HostKey %s/host_key\nPidFile none\n"
                    "AuthorizedKeysFile %s/authorized_keys\n"
                    "PubkeyAuthentication yes\nPasswordAuthentication no\n"
                    "KbdInteractiveAuthentication no\nUsePAM no\n"
                    "PermitRootLogin prohibit-password\nStrictModes no\n"
                    "Subsystem sftp internal-sftp\nLogLevel ERROR\n"
                    % (port, w, w))
        # sshd wants its privilege separation directory.
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        log = os.path.join(w, "sshd.log")
        p = self._spawn("sshd", [SSHD, "-D", "-e", "-f", cfg], log)

        def listening():
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                return True
            except OSError:
                return False
        _wait(listening, "sshd", 20, p, log)
        with open(os.path.join(w, "host_key.pub")) as f:
            hostkey = f.read().split()
        with open(os.path.join(w, "known_hosts"), "w") as f:
            f.write("[127.0.0.1]:%d %s %s\n" % (port, hostkey[0],
                                                hostkey[1]))
        user = os.environ.get("USER") or "root"
        if os.geteuid() == 0:
            user = "root"
        opts = ("port=%d,IdentityFile=%s/client_key,IdentitiesOnly=yes,"
                "UserKnownHostsFile=%s/known_hosts,"
                "GlobalKnownHostsFile=/dev/null,StrictHostKeyChecking=yes,"
                "BatchMode=yes,no_contain_symlinks" % (port, w, w))
        if not self.cache:
            opts += (",dir_cache=no,attr_timeout=0,entry_timeout=0,"
                     "negative_timeout=0")
        self.extra = {"export": export, "port": port}
        for i in range(self.nclients):
            self._mount_client(i, [sshfs, "-f", "-F", "/dev/null", "-o",
                                   opts, "%s@127.0.0.1:%s" % (user, export),
                                   "@MNT"])

    @property
    def export(self):
        """The exported directory itself (the server side)."""
        return self.extra["export"]


class MooseFsBacking(Backing):
    kind = "moosefs"

    def _start(self):
        master = _which("mfsmaster")
        chunk = _which("mfschunkserver")
        mount = _which("mfsmount")
        _which("ip")
        _which("nsenter")
        if not os.path.exists("/dev/fuse"):
            raise Unavailable("/dev/fuse is missing", env_limit=True)
        empty = "/var/lib/mfs/metadata.mfs.empty"
        if not os.path.exists(empty):
            raise Unavailable("%s is missing (moosefs-master)" % empty)
        ns = "veilfs-mfs-" + uuid.uuid4().hex[:8]
        p = subprocess.run(["ip", "netns", "add", ns], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        if p.returncode != 0:
            raise Unavailable("cannot create a network namespace: %s"
                              % p.stdout.decode(errors="replace").strip(),
                              env_limit=True)
        self.extra = {"netns": ns}
        self.save()
        for cmd in (["link", "set", "lo", "up"],
                    ["addr", "add", MFS_ADDR + "/32", "dev", "lo"]):
            subprocess.run(["ip", "-n", ns] + cmd, check=True)
        nsenter = ["nsenter", "--net=/run/netns/" + ns]
        w = self.work
        for d in ("master", "cs", "chunks"):
            os.makedirs(os.path.join(w, d), exist_ok=True)
        meta = os.path.join(w, "master", "metadata.mfs")
        if not os.path.exists(meta):
            shutil.copy(empty, meta)
        common = ("WORKING_USER = root\nWORKING_GROUP = root\n"
                  "NICE_LEVEL = 0\nLOCK_MEMORY = 0\nDISABLE_OOM_KILLER = 0\n")
        with open(os.path.join(w, "mfsmaster.cfg"), "w") as f:
            f.write(common + "DATA_PATH = %s/master\n"
                    "EXPORTS_FILENAME = %s/mfsexports.cfg\n"
                    "TOPOLOGY_FILENAME = %s/mfstopology.cfg\n"
                    "MATOML_LISTEN_HOST = %s\nMATOCS_LISTEN_HOST = %s\n"
                    "MATOCL_LISTEN_HOST = %s\n"
                    % (w, w, w, MFS_ADDR, MFS_ADDR, MFS_ADDR))
        with open(os.path.join(w, "mfsexports.cfg"), "w") as f:
            f.write("* / rw,alldirs,maproot=0:0\n")
        open(os.path.join(w, "mfstopology.cfg"), "w").close()
        with open(os.path.join(w, "mfschunkserver.cfg"), "w") as f:
            f.write(common + "DATA_PATH = %s/cs\n"
                    "HDD_CONF_FILENAME = %s/mfshdd.cfg\n"
                    "MASTER_HOST = %s\nBIND_HOST = %s\n"
                    "CSSERV_LISTEN_HOST = %s\nHDD_LEAVE_SPACE_DEFAULT = 0\n"
                    "HDD_TEST_SPEED = 0\n"
                    % (w, w, MFS_ADDR, MFS_ADDR, MFS_ADDR))
        with open(os.path.join(w, "mfshdd.cfg"), "w") as f:
            f.write(os.path.join(w, "chunks") + "\n")
        mlog = os.path.join(w, "mfsmaster.log")
        mp = self._spawn("mfsmaster", nsenter + [
            master, "-f", "-c", os.path.join(w, "mfsmaster.cfg"), "start"],
            mlog)
        _wait(lambda: "initialized properly" in _tail(mlog), "mfsmaster",
              30, mp, mlog)
        clog = os.path.join(w, "mfschunkserver.log")
        cp = self._spawn("mfschunkserver", nsenter + [
            chunk, "-f", "-c", os.path.join(w, "mfschunkserver.cfg"),
            "start"], clog)
        _wait(lambda: "initialized properly" in _tail(clog),
              "mfschunkserver", 30, cp, clog)
        opts = "mfsmaster=%s" % MFS_ADDR
        if not self.cache:
            opts += (",mfsattrcacheto=0,mfsentrycacheto=0,"
                     "mfsdirentrycacheto=0,mfsnegentrycacheto=0")
        for i in range(self.nclients):
            self._mount_client(i, nsenter + [mount, "-f", "-o", opts,
                                             "@MNT"])
        self._wait_writable(self.clients[0])

    def _wait_writable(self, mnt):
        """The chunkserver registers with the master a moment after it
        starts: until then writes fail."""
        probe = os.path.join(mnt, ".veilfs-probe")
        deadline = time.monotonic() + 60

        def ok():
            try:
                with open(probe, "wb") as f:
                    f.write(b"x" * 70000)
                    f.flush()
                    os.fsync(f.fileno())
                with open(probe, "rb") as f:
                    return len(f.read()) == 70000
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
                return False
        _wait(ok, "moosefs chunkserver", 60)
        os.unlink(probe)

    def _stop_extra(self):
        ns = self.extra.get("netns")
        if ns:
            subprocess.run(["ip", "netns", "del", ns],
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            self.extra = {}


KINDS = {"sshfs": SshfsBacking, "moosefs": MooseFsBacking}


def stop_dir(work):
    """Stop what `netback.py start` left running in WORK."""
    with open(os.path.join(work, STATE)) as f:
        st = json.load(f)
    for mnt in st["clients"]:
        _unmount(mnt)
    for name in reversed(list(st["pids"])):
        _stop_pid(st["pids"][name])
    ns = st.get("extra", {}).get("netns")
    if ns:
        subprocess.run(["ip", "netns", "del", ns])
    os.unlink(os.path.join(work, STATE))
    left = [m for m in st["clients"] if os.path.ismount(m)]
    if left:
        sys.exit("still mounted: " + " ".join(left))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("start")
    s.add_argument("kind", choices=sorted(KINDS))
    s.add_argument("dir")
    s.add_argument("--clients", type=int, default=1)
    s.add_argument("--nocache", action="store_true",
                   help="client mounts without attribute/entry caching")
    t = sub.add_parser("stop")
    t.add_argument("dir")
    a = ap.parse_args()
    if a.cmd == "stop":
        stop_dir(a.dir)
        return
    if os.path.exists(os.path.join(a.dir, STATE)):
        sys.exit("%s: already started (netback.py stop %s)"
                 % (a.dir, a.dir))
    b = KINDS[a.kind](a.dir, a.clients, cache=not a.nocache)
    try:
        b.start()
    except Unavailable as e:
        sys.exit("%s: %s" % (a.kind, e))
    # The daemons stay up after we exit: `stop` ends them by their ids.
    for mnt in b.clients:
        print(mnt)


if __name__ == "__main__":
    main()
