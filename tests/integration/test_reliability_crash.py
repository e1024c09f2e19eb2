# SPDX-License-Identifier: MIT
"""Crash consistency (issue #6, point 2): SIGKILL the daemon in the middle
of a stream of fsync'ed writes, clean up the dead mount with fusermount3,
remount, and check that every byte whose write was acknowledged by a
successful fsync is there and that every other file still reads completely.
Three kill/remount rounds per cipher, with the writer continuing each round
where the acknowledged state left it. See doc/crash.md for what a crash can
cost.
"""
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
        os.pwrite(fds[i], pat(i, off, n), off)
        os.fsync(fds[i])
        size[i] = max(size[i], off + n)
        print('ack %d %d' % (i, size[i]), flush=True)
except OSError as e:
    print('writer stopped: %r' % e, flush=True)
'''


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
    seed = ru.base_seed()
    print('seed', seed)
    rnd = random.Random(seed)
    m = ru.new_fs(tmp_path, cipher)
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
        for line in lines:
            if line.startswith('ack '):
                _, i, s = line.split()
                acked[int(i)] = int(s)
                nack += 1
        print('round %d: %d acknowledged writes, sizes %s, last: %s'
              % (rnd_no, nack, acked, lines[-1:]))
        assert nack > 0, out
        m.start()
        for i in range(3):
            p = os.path.join(m.mnt, 'w%d' % i)
            assert os.stat(p).st_size >= acked[i], (i, acked)
            with open(p, 'rb') as f:
                got = f.read(acked[i])
            assert got == pat(i, 0, acked[i]), \
                'file w%d: acknowledged data lost (seed %d)' % (i, seed)
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
