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

Needs root (loop mount) and e2fsprogs.
"""
import os
import re
import shutil
import subprocess

import pytest

import reliab_util as ru
import util

# (name, size, write size): tar's 10 KiB records, cp's 128 KiB, and
# writes of a few bytes.
FILES = [('tar%d' % k, 5000 + k * 9001, 10240) for k in range(12)] + \
    [('cp', 6 << 20, 128 << 10), ('log', 50000, 100)]


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
