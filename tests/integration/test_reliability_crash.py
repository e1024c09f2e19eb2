# SPDX-License-Identifier: MIT
"""Crash consistency (issue #6, point 2): SIGKILL the daemon in the middle
of a stream of fsync'ed writes, clean up the dead mount with fusermount3,
remount, and check that every byte whose write was acknowledged by a
successful fsync is there and that every other file still reads completely.
Three kill/remount rounds per cipher, with the writer continuing each round
where the acknowledged state left it.

The one exception is the format's own crash cost (doc/crash.md): the write
in flight at the kill rewrites its blocks in place (read-modify-write of the
partial first and last block), and SIGKILL can stop the daemon's pwrite at
a page boundary, tearing a block; a torn block fails authentication. So the
blocks that write touched may read as EIO (never as wrong bytes); every other
acknowledged block must be exact. The writer announces each write before
issuing it, so the test knows which write was in flight.
"""
import errno
import os
import random
import subprocess
import sys
import time

import pytest

import reliab_util as ru

# The writer runs in its own process so that the kill does not hang the
# test: it appends (unaligned sizes) to three files, sometimes rewrites an
# already acknowledged range with the same bytes (a read-modify-write of
# old blocks), fsyncs, and only then prints the acknowledged size.
WRITER = r'''
import os, random, sys
mnt, seed = sys.argv[1], int(sys.argv[2])
start = [int(x) for x in sys.argv[3].split(',')]
r = random.Random(seed)
blk = bytes(random.Random(7).randrange(1, 256) for _ in range(4099))
def pat(fid, off, n):
    b = blk[fid:] + blk[:fid]
    s = off % len(b)
    out = (b[s:] + b * (n // len(b) + 2))[:n]
    return out
fds = [os.open(os.path.join(mnt, 'w%d' % i), os.O_RDWR | os.O_CREAT)
       for i in range(3)]
size = list(start)
try:
    while True:
        i = r.randrange(3)
        if size[i] and r.random() < 0.2:
            off = r.randrange(size[i]); n = r.randrange(1, 20000)
            n = min(n, size[i] - off)
        else:
            off = size[i]; n = r.choice([1, 100, 4095, 4096, 4097,
                                         r.randrange(1, 70000)])
        print('start %d %d %d' % (i, off, n), flush=True)
        os.pwrite(fds[i], pat(i, off, n), off)
        os.fsync(fds[i])
        size[i] = max(size[i], off + n)
        print('ack %d %d' % (i, size[i]), flush=True)
except OSError as e:
    print('writer stopped: %r' % e, flush=True)
'''


BS = 4096


def check_blocks(path, fid, size, may_tear, seed):
    """Compare [0, size) block by block; return the blocks that gave EIO
    (allowed only in may_tear)."""
    torn = []
    fd = os.open(path, os.O_RDONLY)
    try:
        want = pat(fid, 0, size)
        for b in range((size + BS - 1) // BS):
            n = min(BS, size - b * BS)
            try:
                got = os.pread(fd, n, b * BS)
            except OSError as e:
                assert e.errno == errno.EIO and b in may_tear, \
                    'w%d block %d: %r, acknowledged data lost (seed %d)' % (
                        fid, b, e, seed)
                torn.append(b)
                continue
            assert got == want[b * BS:b * BS + n], \
                'w%d block %d: wrong bytes (seed %d)' % (fid, b, seed)
    finally:
        os.close(fd)
    return torn


def pat(fid, off, n):
    blk = bytes(random.Random(7).randrange(1, 256) for _ in range(4099))
    b = blk[fid:] + blk[:fid]
    s = off % len(b)
    return (b[s:] + b * (n // len(b) + 2))[:n]


@pytest.mark.parametrize('cipher', sorted(ru.CIPHERS))
def test_kill9_keeps_fsynced_data(tmp_path, cipher):
    run_crash(tmp_path, cipher, 3)


@ru.long_stage
@pytest.mark.parametrize('cipher', sorted(ru.CIPHERS))
def test_kill9_keeps_fsynced_data_long(tmp_path, cipher):
    run_crash(tmp_path, cipher, 15)


def run_crash(tmp_path, cipher, rounds):
    m = ru.new_fs(tmp_path, cipher)
    try:
        crash_rounds(m, rounds)
    finally:
        if m.proc is not None:  # a failed check: do not leave it mounted
            m.stop(check=False)


def crash_rounds(m, rounds):
    seed = ru.base_seed()
    print('seed', seed)
    rnd = random.Random(seed)
    others = {}
    acked = [0, 0, 0]
    with m:
        for k in range(12):
            data = ru.pattern(seed + k, rnd.choice([0, 1, 4096, 5000,
                                                     rnd.randrange(1, 200000)]))
            others['other%d' % k] = data
            with open(os.path.join(m.mnt, 'other%d' % k), 'wb') as f:
                f.write(data)
        os.mkdir(os.path.join(m.mnt, 'dir'))
    for rnd_no in range(rounds):
        m.start()
        w = subprocess.Popen([sys.executable, '-c', WRITER, m.mnt,
                              str(seed + rnd_no),
                              ','.join(str(a) for a in acked)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        time.sleep(0.4 + rnd.random())
        m.kill(umount=False)
        out, _ = w.communicate(timeout=60)
        assert m.umount_dead() == 0, 'fusermount3 -u failed after the crash'
        lines = out.decode(errors='replace').splitlines()
        nack = 0
        inflight = None
        for line in lines:
            if line.startswith('ack '):
                _, i, sz = line.split()
                acked[int(i)] = int(sz)
                nack += 1
                inflight = None
            elif line.startswith('start '):
                inflight = tuple(int(x) for x in line.split()[1:])
        print('round %d: %d acknowledged writes, sizes %s, in flight %s, '
              'last: %s' % (rnd_no, nack, acked, inflight, lines[-1:]))
        assert nack > 0, out
        m.start()
        for i in range(3):
            p = os.path.join(m.mnt, 'w%d' % i)
            assert os.stat(p).st_size >= acked[i], (i, acked)
            may_tear = set()
            if inflight and inflight[0] == i:
                off, n = inflight[1], inflight[2]
                may_tear = set(range(off // BS, (off + n - 1) // BS + 1))
            torn = check_blocks(p, i, acked[i], may_tear, seed)
            if torn:
                # the format's crash cost (doc/crash.md): continue from the
                # start of the first torn block
                print('round %d: w%d blocks %s torn by the in-flight write'
                      % (rnd_no, i, torn))
                acked[i] = min(torn) * BS
        for name, data in others.items():
            assert ru.read_file(os.path.join(m.mnt, name)) == data, name
        assert os.path.isdir(os.path.join(m.mnt, 'dir'))
        # cut back to the acknowledged size so the next round's model holds
        for i in range(3):
            os.truncate(os.path.join(m.mnt, 'w%d' % i), acked[i])
        m.stop()
    m.start()
    m.stop()
    # the whole tree is readable, as gocryptfs -fsck would check
    with m:
        for root, dirs, files in os.walk(m.mnt):
            for f in files:
                ru.read_file(os.path.join(root, f))
