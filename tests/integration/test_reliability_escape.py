# SPDX-License-Identifier: MIT
"""Symlink races against CIPHERDIR (issue #6, point 5).

While threads create, write, rename, list, read and delete files in one
directory of the mount, an attacker with write access to CIPHERDIR keeps
replacing that directory's ciphertext directory with a symlink to a
directory outside CIPHERDIR, and back, and does the same to the ciphertext
of a file in it that the threads read and rewrite. The outside directory is baited: it
holds a copy of the real gocryptfs.diriv and of a real encrypted file, so a
daemon that followed the symlink would find valid names there. It lives on
its own tmpfs mounted with strictatime, so even a read or a listing through
the symlink would change an atime. Afterwards the outside directory must be
exactly as before: same entries, contents, modes, and a/m/c times.
"""
import os
import shutil
import subprocess
import threading
import time

import pytest

import reliab_util as ru
import util


def stat_snapshot(top, rels):
    """lstat only (no listing, no reads: with strictatime those would
    change atimes themselves)."""
    snap = {}
    for rel in rels:
        st = os.lstat(os.path.join(top, rel))
        snap[rel] = (st.st_mode, st.st_size, st.st_atime_ns, st.st_mtime_ns,
                     st.st_ctime_ns, st.st_nlink, st.st_ino)
    return snap


def content_snapshot(top):
    snap = {}
    for root, dirs, files in os.walk(top):
        for n in dirs:
            snap[os.path.relpath(os.path.join(root, n), top)] = None
        for n in files:
            p = os.path.join(root, n)
            with open(p, 'rb') as f:
                snap[os.path.relpath(p, top)] = f.read()
    return snap


@pytest.fixture
def bait_dir(tmp_path):
    if os.geteuid() != 0:
        pytest.skip('needs root to mount a tmpfs')
    d = os.path.join(str(tmp_path), 'outside')
    os.mkdir(d)
    subprocess.run(['mount', '-t', 'tmpfs', '-o',
                    'size=4m,strictatime,mode=0755', 'tmpfs', d], check=True)
    try:
        yield d
    finally:
        subprocess.run(['umount', '-l', d])


def test_symlink_swap_never_escapes(tmp_path, bait_dir):
    run_escape(tmp_path, bait_dir, 'gcm',
               float(os.environ.get('VEILFS_ESCAPE_SECONDS', '4')))


@ru.long_stage
@pytest.mark.parametrize('cipher', sorted(ru.CIPHERS))
def test_symlink_swap_never_escapes_long(tmp_path, bait_dir, cipher):
    run_escape(tmp_path, bait_dir, cipher, 30)


def run_escape(tmp_path, bait_dir, cipher, duration):
    m = ru.new_fs(tmp_path, cipher)
    with m:
        os.mkdir(os.path.join(m.mnt, 'd'))
        [cd] = ru.cipher_entries(m.cipherdir)
        cdir = os.path.join(m.cipherdir, cd)
        with open(os.path.join(m.mnt, 'd', 'seed'), 'wb') as f:
            f.write(b'seed data' * 100)
        # the bait: valid-looking ciphertext outside CIPHERDIR (the diriv
        # and the encrypted 'seed' file, under their real names)
        for e in os.listdir(cdir):
            shutil.copy2(os.path.join(cdir, e), os.path.join(bait_dir, e))
        with open(os.path.join(bait_dir, 'victim.txt'), 'wb') as f:
            f.write(b'must not change\n')
        os.mkdir(os.path.join(bait_dir, 'subdir'))
        contents = content_snapshot(bait_dir)
        rels = ['.'] + sorted(contents)
        time.sleep(0.05)
        before = stat_snapshot(bait_dir, rels)

        stop = threading.Event()
        counts = {'ok': 0, 'err': 0, 'swaps': 0}

        seed_c = [e for e in ru.cipher_entries(cdir)][0]
        cseed = os.path.join(cdir, seed_c)

        def swap(path, target):
            """Replace path by a symlink to target for a moment."""
            real = path + '.real'
            os.rename(path, real)
            try:
                os.symlink(target, path)
                counts['swaps'] += 1
                time.sleep(0.0005)
                os.unlink(path)
            finally:
                os.rename(real, path)

        def attacker():
            # one thread, so a file swap never runs while the directory is
            # a symlink (it would then change the bait itself)
            k = 0
            while not stop.is_set():
                k += 1
                try:
                    if k % 2:
                        swap(cdir, bait_dir)
                    else:
                        swap(cseed, os.path.join(bait_dir, seed_c))
                except OSError:
                    pass
                time.sleep(0.0002)

        def rewrite_seed(d):
            with open(os.path.join(d, 'seed'), 'r+b') as f:
                f.write(b'seed data' * 100)

        def victim(tid):
            d = os.path.join(m.mnt, 'd')
            k = 0
            while not stop.is_set():
                k += 1
                a = os.path.join(d, 'f%d_%d' % (tid, k % 5))
                b = os.path.join(d, 'g%d_%d' % (tid, k % 5))
                for op in (lambda: open(a, 'wb').write(b'x' * 5000),
                           lambda: os.rename(a, b),
                           lambda: open(b, 'rb').read(),
                           lambda: os.listdir(d),
                           lambda: open(os.path.join(d, 'seed'),
                                        'rb').read(),
                           # same bytes again: only a followed symlink
                           # would show (mtime of the bait)
                           lambda: rewrite_seed(d),
                           lambda: os.symlink('t', a + '.l'),
                           lambda: os.mkdir(a + '.d'),
                           lambda: os.rmdir(a + '.d'),
                           lambda: os.unlink(a + '.l'),
                           lambda: os.truncate(b, 100),
                           lambda: os.unlink(b)):
                    try:
                        op()
                        counts['ok'] += 1
                    except OSError:
                        counts['err'] += 1

        ts = [threading.Thread(target=attacker)] + \
            [threading.Thread(target=victim, args=(i,)) for i in range(3)]
        for t in ts:
            t.start()
        time.sleep(duration)
        # Both sides must have done enough for the run to mean anything:
        # on a busy machine that takes longer, so wait for the counts
        # rather than assert what a fixed time achieved. A lookup that
        # met 'd' swapped for a symlink leaves that entry in the kernel's
        # cache for long (a change behind the mount's back is seen when
        # the kernel forgets it): drop the unused dentries meanwhile.
        deadline = time.monotonic() + 40 * util.SLOW
        while ((counts['swaps'] <= 100 or counts['ok'] <= 100)
               and time.monotonic() < deadline
               and all(t.is_alive() for t in ts)):
            with open('/proc/sys/vm/drop_caches', 'w') as f:
                f.write('2\n')
            time.sleep(0.5)
        stop.set()
        for t in ts:
            t.join()
        print('operations ok %(ok)d, failed %(err)d, swaps %(swaps)d'
              % counts)
        assert counts['swaps'] > 100 and counts['ok'] > 100, counts
        assert os.path.isdir(cdir) and not os.path.islink(cdir)
        after = stat_snapshot(bait_dir, rels)
        changed = {k: (before[k], after[k]) for k in rels
                   if before[k] != after[k]}
        assert not changed, 'outside directory touched: %r' % changed
        assert content_snapshot(bait_dir) == contents
        # the filesystem itself is still fine (after a remount: the kernel
        # may have cached 'd' as the symlink it saw during the race)
        m.restart()
        assert ru.read_file(os.path.join(m.mnt, 'd', 'seed')) == \
            b'seed data' * 100
