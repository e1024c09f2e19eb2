# SPDX-License-Identifier: MIT
"""Ciphertext lies on an ext4 disk as compactly as the plaintext would.

A program that writes 10 KiB at a time (tar) starts every other write
inside the file's partial last block. Had veilfs reserved that block with
fallocate before rewriting it, or reserved the blocks of a streaming append
before answering it, ext4 would allocate them at once, away from the rest
of the file, which it allocates later at writeback: ciphertext files in
pieces where the plaintext has one, slower to read cold and to delete (one
discard per piece on a disk mounted with -o discard). The same writes, made
with the same calls on the same fresh ext4 image, must leave each
ciphertext file in no more extents (FIEMAP, via filefrag) than its plain
copy, and read back the same.

Each file is written and fsynced before the next one is written, on an
image with 4 KiB blocks (one block group): ext4 then allocates a file's
delayed blocks in one go, with no other file's allocation in between and
no group boundary to cross (mkfs's default for a small image, 1 KiB
blocks in 8 MiB groups, and the writeback of all files at one sync, in
2 MiB pieces taken in turns, gave a 6 MiB file 2 or 3 extents by chance),
so only the writes themselves decide how many pieces a file gets.

A file that keeps growing has its writeback started behind its end
(src/fs/file.c write_behind): after a stream of writes most of its backing
pages are no longer dirty, where the same writes to a plain file leave
them all dirty (the kernel waits 30 s or for GiBs of dirty pages).

An open for reading starts the disk's read of the backing file's first
blocks (src/fs/file.c file_prefetch), for the READ that follows it one
round trip later; an open for writing only does not. Two opens for reading
in a row in one directory start reading ahead across the directory's
next files (src/fs/ahead.c); one open does not.

Needs root (loop mount) and e2fsprogs.
"""
import os
import re
import shutil
import subprocess
import time

import pytest

import reliab_util as ru
import util

# (name, size, write size): tar's 10 KiB records, cp's 128 KiB (a file
# large enough for write-behind too), and writes of a few bytes.
FILES = [('tar%d' % k, 5000 + k * 9001, 10240) for k in range(12)] + \
    [('cp', 6 << 20, 128 << 10), ('big', 30 << 20, 128 << 10),
     ('log', 50000, 100)]


def write_in_pieces(path, data, step):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for off in range(0, len(data), step):
            os.write(fd, data[off:off + step])
        os.fsync(fd)
    finally:
        os.close(fd)


def extents(path):
    out = subprocess.run(['filefrag', path], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    m = re.search(r': (\d+) extents? found', out)
    assert m, out
    return int(m.group(1))


def test_ciphertext_as_compact_as_plaintext(tmp_path):
    if not shutil.which('filefrag'):
        pytest.skip('no filefrag (e2fsprogs)')
    with util.ext4(tmp_path, 128 << 20, block=4096) as disk:
        plain = os.path.join(disk, 'plain')
        os.mkdir(plain)
        cdir = os.path.join(disk, 'c')
        m = ru.new_fs(tmp_path, 'gcm', cipherdir=cdir)
        want = {}
        with m:
            for k, (name, size, step) in enumerate(FILES):
                data = ru.pattern(k, size)
                want[name] = data
                write_in_pieces(os.path.join(m.mnt, name), data, step)
                write_in_pieces(os.path.join(plain, name), data, step)
            os.sync()
            ino = {os.stat(os.path.join(m.mnt, n)).st_ino: n for n in want}
            backing = {}
            for e in os.listdir(cdir):
                st = os.stat(os.path.join(cdir, e))
                if st.st_ino in ino:
                    backing[ino[st.st_ino]] = os.path.join(cdir, e)
            assert sorted(backing) == sorted(want)
            worse = []
            for name in want:
                c, p = extents(backing[name]), extents(
                    os.path.join(plain, name))
                print(name, 'ciphertext', c, 'plaintext', p, 'extents')
                if c > p:
                    worse.append('%s: %d extents, plaintext %d' % (name, c, p))
            assert not worse, worse
            for name, data in want.items():
                assert ru.read_file(os.path.join(m.mnt, name)) == data, name


WB_LAG = 4 << 20   # src/fs/file.c


def dirty_bytes(path):
    """Bytes of path's page cache that are dirty, or None where the kernel
    has no cachestat(2)."""
    st = util.cachestat(path)
    return None if st is None else st['dirty'] * os.sysconf('SC_PAGE_SIZE')


def test_growing_file_is_written_behind(tmp_path):
    # large enough that ext4 does not write back by itself for lack of
    # free space (it does when dirty blocks come to half the free ones)
    with util.ext4(tmp_path, 1 << 30, block=4096) as disk:
        plain = os.path.join(disk, 'plain')
        cdir = os.path.join(disk, 'c')
        m = ru.new_fs(tmp_path, 'gcm', cipherdir=cdir)
        data = ru.pattern(3, 64 << 20)
        step = 128 << 10
        os.sync()   # others' dirty pages must not wake the kernel's flusher
        with m:
            big = os.path.join(m.mnt, 'big')
            for path in (plain, big):
                with open(path, 'wb') as f:
                    for off in range(0, len(data), step):
                        f.write(data[off:off + step])
            backing = [os.path.join(cdir, e) for e in ru.cipher_entries(cdir)]
            assert len(backing) == 1, backing
            left, ref = dirty_bytes(backing[0]), dirty_bytes(plain)
            print('dirty: ciphertext %s, plain copy %s bytes' % (left, ref))
            if ref is None:
                pytest.skip('no cachestat(2) in this kernel')
            if ref < len(data) // 2:
                pytest.skip('the kernel wrote the plain copy back itself '
                            '(%d bytes still dirty)' % ref)
            # writeback starts each time 2 * WB_LAG are dirty, of all but
            # the last WB_LAG (and the last write, answered before it was
            # written, may be between its pwrite and that start)
            assert left <= 2 * WB_LAG + step + 8192, left
            assert ru.read_file(big) == data
            with open(big, 'rb') as f:
                os.fsync(f.fileno())
            # rewriting blocks inside the file starts no writeback: only
            # growth does
            new = ru.pattern(4, 32 << 20)
            with open(big, 'r+b') as f:
                f.seek(16 << 20)
                for off in range(0, len(new), step):
                    f.write(new[off:off + step])
            inside = dirty_bytes(backing[0])
            print('dirty after rewriting 32 MiB inside: %d' % inside)
            assert inside >= len(new) // 2, inside
            data = data[:16 << 20] + new + data[(48 << 20):]
            assert ru.read_file(big) == data


def test_open_for_reading_fetches_the_first_blocks(tmp_path):
    with util.ext4(tmp_path, 64 << 20, block=4096) as disk:
        cdir = os.path.join(disk, 'c')
        m = ru.new_fs(tmp_path, 'gcm', cipherdir=cdir)
        data = ru.pattern(5, 100000)
        with m:
            p = os.path.join(m.mnt, 'f')
            with open(p, 'wb') as f:
                f.write(data)
                os.fsync(f.fileno())
            backing = os.path.join(cdir, ru.cipher_entries(cdir)[0])

            def cached():
                fd = os.open(backing, os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)
                return util.cachestat(backing)

            st = cached()
            if st is None:
                pytest.skip('no cachestat(2) in this kernel')
            assert st['cache'] == 0, st   # evicted: clean after the fsync
            fd = os.open(p, os.O_WRONLY)
            os.close(fd)
            time.sleep(0.5)
            st = util.cachestat(backing)
            assert st['cache'] == 0, ('fetched for a write-only open', st)
            fd = os.open(p, os.O_RDONLY)
            try:
                deadline = time.monotonic() + 10
                while util.cachestat(backing)['cache'] == 0:
                    assert time.monotonic() < deadline, 'nothing fetched'
                    time.sleep(0.01)
                pages = util.cachestat(backing)['cache']
                print('pages fetched before any read:', pages)
                assert pages * 4096 >= len(data), pages
                assert os.read(fd, len(data) + 1) == data
            finally:
                os.close(fd)


def _evict(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def test_opens_in_a_row_read_ahead_across_the_directory(tmp_path):
    """After two files of a directory are opened for reading, the first
    blocks of the files listed after the second are fetched from the disk
    before anything opens them; a FIFO and a subdirectory among them are
    passed over. A single open in another directory fetches nothing
    else."""
    with util.ext4(tmp_path, 64 << 20, block=4096) as disk:
        cdir = os.path.join(disk, 'c')
        m = ru.new_fs(tmp_path, 'gcm', cipherdir=cdir)
        with m:
            for dname in ('d', 'e'):
                d = os.path.join(m.mnt, dname)
                os.mkdir(d)
                for i in range(24):
                    with open(os.path.join(d, 'f%02d' % i), 'wb') as f:
                        f.write(ru.pattern(i, 20000))
            os.mkfifo(os.path.join(m.mnt, 'd', 'pipe'))
            os.mkdir(os.path.join(m.mnt, 'd', 'sub'))
            os.sync()

            def backing_of(dname):
                """(plain name, backing path) of every entry, in the
                backing directory's listing order (matched by inode
                number, which the mount passes through)."""
                pdir = os.path.join(m.mnt, dname)
                bdir = [os.path.join(cdir, e) for e in ru.cipher_entries(cdir)
                        if os.stat(os.path.join(cdir, e)).st_ino ==
                        os.stat(pdir).st_ino][0]
                plain = {os.lstat(os.path.join(pdir, p)).st_ino: p
                         for p in os.listdir(pdir)}
                out = [(plain[os.lstat(os.path.join(bdir, b)).st_ino],
                        os.path.join(bdir, b))
                       for b in os.listdir(bdir) if b != 'gocryptfs.diriv']
                assert len(out) == len(plain), (out, plain)
                return out

            entries = {n: backing_of(n) for n in ('d', 'e')}
            files = {n: [(p, b) for p, b in entries[n]
                         if p.startswith('f')] for n in entries}
            for n in files:
                for _, b in files[n]:
                    _evict(b)
            if util.cachestat(files['d'][0][1]) is None:
                pytest.skip('no cachestat(2) in this kernel')
            for n in files:
                for p, b in files[n]:
                    assert util.cachestat(b)['cache'] == 0, (n, p)

            # one open in e: its own blocks only
            first, rest = files['e'][0], files['e'][1:]
            with open(os.path.join(m.mnt, 'e', first[0]), 'rb'):
                time.sleep(0.5)
            assert [p for p, b in rest if util.cachestat(b)['cache']] == []

            # two in d: the files after the second
            a, b2 = files['d'][0], files['d'][1]
            with open(os.path.join(m.mnt, 'd', a[0]), 'rb'):
                pass
            with open(os.path.join(m.mnt, 'd', b2[0]), 'rb'):
                after = files['d'][2:]
                deadline = time.monotonic() + 10
                while True:
                    cold = [p for p, b in after
                            if util.cachestat(b)['cache'] == 0]
                    if not cold:
                        break
                    assert time.monotonic() < deadline, ('not fetched',
                                                         cold)
                    time.sleep(0.02)
            assert os.path.exists(os.path.join(m.mnt, 'd', 'pipe'))
            for p, b in files['d']:
                with open(os.path.join(m.mnt, 'd', p), 'rb') as f:
                    assert f.read() == ru.pattern(int(p[1:]), 20000)
