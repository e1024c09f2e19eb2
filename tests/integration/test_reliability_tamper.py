# SPDX-License-Identifier: MIT
"""Tampering with CIPHERDIR (issue #6, point 4) and regressions of
gocryptfs's data-loss bugs.

Every test writes through the mount, unmounts, changes ciphertext bytes or
names directly in CIPHERDIR the way an attacker with write access could,
remounts and checks exactly what the user sees: EIO for the damaged block
only (with a daemon log line naming file and block), holes read as zeros,
corrupt or dangerous names hidden. Names the filesystem would never write
(".", "..", "a/b", NUL) are made with tests/tools/mkname, an independent
EME implementation, in a copy of the gocryptfs-made vector filesystem whose
master key is known.
"""
import errno
import mmap
import os
import re
import shutil
import subprocess
import threading
import time

import pytest

import reliab_util as ru

HL = 18
CBS = {'gcm': 4128, 'aessiv': 4128, 'xchacha': 4136}
NONCE = {'gcm': 16, 'aessiv': 16, 'xchacha': 24}


def make_files(m, files):
    """Create files through the mount one by one; return plain name ->
    ciphertext path (found by the entry each creation adds)."""
    out = {}
    for name, data in files.items():
        before = set(ru.cipher_entries(m.cipherdir))
        with open(os.path.join(m.mnt, name), 'wb') as f:
            f.write(data)
        new = set(ru.cipher_entries(m.cipherdir)) - before
        assert len(new) == 1, new
        out[name] = os.path.join(m.cipherdir, new.pop())
    return out


def patch(path, off, data):
    with open(path, 'r+b') as f:
        f.seek(off)
        f.write(data)


def flip(path, off, bit=0x04):
    with open(path, 'r+b') as f:
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ bit]))


def pread(path, off, n):
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.pread(fd, n, off)
    finally:
        os.close(fd)


def expect_eio(path, off, n):
    with pytest.raises(OSError) as ei:
        pread(path, off, n)
    assert ei.value.errno == errno.EIO, ei.value


def expect_eio_whole(path):
    """Reading the whole file stops with EIO (after a short read of the
    good prefix, as POSIX read does)."""
    with pytest.raises(OSError) as ei:
        ru.read_file(path)
    assert ei.value.errno == errno.EIO, ei.value


def log_since(m, mark):
    return m.log()[mark:]


def assert_logged_block(text, names, block):
    """Some log line names the file (plain name, ciphertext name or inode
    number) and the block number."""
    for line in text.splitlines():
        if not re.search(r'block\D{0,4}%d\b' % block, line, re.I):
            continue
        if any(str(n) in line for n in names):
            return
    raise AssertionError('no log line naming %r and block %d in:\n%s'
                         % (names, block, text))


@pytest.mark.parametrize('cipher', sorted(ru.CIPHERS))
def test_flipped_bit_is_eio_for_that_block_only(tmp_path, cipher):
    size = 3 * 4096 + 100
    data = {n: ru.pattern(i, size) for i, n in
            enumerate(['nonce', 'body', 'tag'])}
    cbs = CBS[cipher]
    m = ru.new_fs(tmp_path, cipher)
    with m:
        cpaths = make_files(m, data)
    b1 = HL + cbs
    flip(cpaths['nonce'], b1 + 3)
    flip(cpaths['body'], b1 + NONCE[cipher] + 1000)
    flip(cpaths['tag'], b1 + cbs - 1, 0x80)
    with m:
        mark = len(m.log())
        for name, want in data.items():
            p = os.path.join(m.mnt, name)
            assert os.stat(p).st_size == size
            assert pread(p, 0, 4096) == want[:4096]
            expect_eio(p, 4096, 4096)
            expect_eio(p, 4096 + 4095, 1)
            assert pread(p, 8192, 4096 + 100) == want[8192:]
            expect_eio_whole(p)
            ino = os.stat(p).st_ino
            assert_logged_block(log_since(m, mark),
                                [name, os.path.basename(cpaths[name]), ino],
                                1)


def test_swapped_blocks_within_and_between_files(tmp_path):
    size = 3 * 4096
    a, b = ru.pattern(1, size), ru.pattern(2, size)
    cbs = CBS['gcm']
    m = ru.new_fs(tmp_path)
    with m:
        cp = make_files(m, {'a': a, 'b': b, 'c': a})
    # within a: blocks 0 and 1 swapped
    blk = [pread(cp['a'], HL + i * cbs, cbs) for i in range(3)]
    patch(cp['a'], HL, blk[1] + blk[0])
    # between b and c: block 2 of b replaced by block 2 of c (same
    # plaintext, other file ID)
    patch(cp['b'], HL + 2 * cbs, pread(cp['c'], HL + 2 * cbs, cbs))
    # the header of c replaced by the header of b: every block fails
    patch(cp['c'], 0, pread(cp['b'], 0, HL))
    with m:
        pa, pb, pc = (os.path.join(m.mnt, n) for n in 'abc')
        expect_eio(pa, 0, 1)
        expect_eio(pa, 4096, 1)
        assert pread(pa, 8192, 4096) == a[8192:]
        assert pread(pb, 0, 8192) == b[:8192]
        expect_eio(pb, 8192, 10)
        for blkno in range(3):
            expect_eio(pc, blkno * 4096, 1)


def test_partial_last_block_is_eio_at_the_end_only(tmp_path):
    size = 2 * 4096 + 1000
    d = ru.pattern(3, size)
    cbs = CBS['gcm']
    m = ru.new_fs(tmp_path)
    with m:
        cp = make_files(m, {'short': d, 'tiny': d})
    full = os.path.getsize(cp['short'])
    assert full == HL + 2 * cbs + 1000 + 32
    os.truncate(cp['short'], full - 10)
    os.truncate(cp['tiny'], HL + 2 * cbs + 20)   # tail <= overhead
    with m:
        p = os.path.join(m.mnt, 'short')
        assert os.stat(p).st_size == size - 10
        assert pread(p, 0, 8192) == d[:8192]
        expect_eio(p, 8192, 100)
        expect_eio_whole(p)
        p = os.path.join(m.mnt, 'tiny')
        assert os.stat(p).st_size == 8192 + 1  # gocryptfs shows +1 byte
        assert pread(p, 0, 8192) == d[:8192]
        expect_eio(p, 8192, 1)


def test_header_only_file_reads_empty(tmp_path):
    m = ru.new_fs(tmp_path)
    with m:
        cp = make_files(m, {'h': b'x' * 5000})
    os.truncate(cp['h'], HL)
    with m:
        p = os.path.join(m.mnt, 'h')
        assert os.stat(p).st_size == 0
        assert ru.read_file(p) == b''
        with open(p, 'r+b') as f:   # a write starts a fresh file
            f.write(b'new')
        assert ru.read_file(p) == b'new'
    with m:
        assert ru.read_file(os.path.join(m.mnt, 'h')) == b'new'


def test_zeroed_full_block_reads_as_zeros(tmp_path):
    d = ru.pattern(4, 3 * 4096)
    cbs = CBS['gcm']
    m = ru.new_fs(tmp_path)
    with m:
        cp = make_files(m, {'z': d, 'zpart': d})
    patch(cp['z'], HL + cbs, b'\0' * cbs)
    # a zeroed *partial* range is not a hole: EIO
    patch(cp['zpart'], HL + cbs, b'\0' * 100)
    with m:
        p = os.path.join(m.mnt, 'z')
        got = ru.read_file(p)
        assert got == d[:4096] + b'\0' * 4096 + d[8192:]
        p = os.path.join(m.mnt, 'zpart')
        expect_eio(p, 4096, 1)
        assert pread(p, 8192, 4096) == d[8192:]


def subdir_setup(m, files=('one', 'two')):
    os.mkdir(os.path.join(m.mnt, 'sub'))
    [cdir] = [e for e in ru.cipher_entries(m.cipherdir)]
    for f in files:
        with open(os.path.join(m.mnt, 'sub', f), 'wb') as fh:
            fh.write(f.encode())
    return os.path.join(m.cipherdir, cdir)


@pytest.mark.parametrize('damage', ['missing', 'short', 'long', 'zero',
                                    'other'])
def test_bad_diriv_lists_empty_and_logs(tmp_path, damage):
    m = ru.new_fs(tmp_path)
    with m:
        csub = subdir_setup(m)
        assert sorted(os.listdir(os.path.join(m.mnt, 'sub'))) == ['one',
                                                                  'two']
    div = os.path.join(csub, 'gocryptfs.diriv')
    os.chmod(div, 0o644)
    if damage == 'missing':
        os.unlink(div)
    else:
        content = {'short': b'\x01' * 5, 'long': os.urandom(17),
                   'zero': b'\0' * 16, 'other': os.urandom(16)}[damage]
        with open(div, 'wb') as f:
            f.write(content)
    with m:
        mark = len(m.log())
        sub = os.path.join(m.mnt, 'sub')
        try:
            listing = os.listdir(sub)
        except OSError as e:
            listing = []
            assert e.errno == errno.EIO, e
        assert listing == []
        for n in ('one', 'two'):
            assert not os.path.exists(os.path.join(sub, n))
        text = log_since(m, mark)
        if damage != 'other':  # a valid-looking wrong IV: names are corrupt
            assert re.search(r'diriv', text, re.I), text
        else:
            assert text.strip(), 'nothing logged for undecryptable names'
        # the rest of the filesystem is fine
        with open(os.path.join(m.mnt, 'ok'), 'wb') as f:
            f.write(b'ok')
        assert 'ok' in os.listdir(m.mnt)


def test_missing_name_file_hides_entry_and_logs(tmp_path):
    long = 'L' * 200
    m = ru.new_fs(tmp_path)
    with m:
        with open(os.path.join(m.mnt, long), 'wb') as f:
            f.write(b'long')
        with open(os.path.join(m.mnt, 'short'), 'wb') as f:
            f.write(b'short')
        assert sorted(os.listdir(m.mnt)) == [long, 'short']
    [side] = [e for e in os.listdir(m.cipherdir) if e.endswith('.name')]
    os.unlink(os.path.join(m.cipherdir, side))
    with m:
        mark = len(m.log())
        assert os.listdir(m.mnt) == ['short']
        text = log_since(m, mark)
        stem = side[:-len('.name')]
        assert stem in text or 'longname' in text.lower() or \
            '.name' in text, text


def vector_copy(tmp_path):
    src = os.path.join(ru.VECTORS, 'gcm')
    if not os.path.isdir(src):
        raise AssertionError('vectors not extracted at %s' % src)
    cdir = os.path.join(str(tmp_path), 'vec.cipher')
    subprocess.run(['cp', '-a', os.path.join(src, 'cipher'), cdir],
                   check=True)
    pw = os.path.join(str(tmp_path), 'vec.pw')
    shutil.copy(os.path.join(src, 'password.txt'), pw)
    with open(os.path.join(src, 'masterkey.hex')) as f:
        mk = f.read().strip()
    return cdir, pw, mk


def mkname(mk, diriv, raw, nopad=False):
    cmd = [ru.tool('mkname')] + (['-n'] if nopad else []) + \
        [mk, diriv, raw.hex()]
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE
                          ).stdout.decode().strip()


def test_dangerous_decrypted_names_are_rejected(tmp_path):
    cdir, pw, mk = vector_copy(tmp_path)
    div = os.path.join(cdir, 'gocryptfs.diriv')
    bad = {'dot': b'.', 'dotdot': b'..', 'slash': b'a/b', 'lead': b'/etc',
           'nul': b'a\0b', 'nulend': b'x\0'}
    crafted = {k: mkname(mk, div, v) for k, v in bad.items()}
    # broken padding: last byte 0 / 17 / inconsistent
    crafted['pad0'] = mkname(mk, div, b'abcdefghijklmno\0', nopad=True)
    crafted['pad17'] = mkname(mk, div, b'a' * 15 + b'\x11', nopad=True)
    crafted['padmix'] = mkname(mk, div, b'a' * 12 + b'\x01\x04\x04\x04',
                               nopad=True)
    good = mkname(mk, div, b'crafted-ok')
    for cn in list(crafted.values()) + [good]:
        with open(os.path.join(cdir, cn), 'wb'):
            pass
    os.mkdir(os.path.join(cdir, crafted['dotdot'] + 'x'))  # plain garbage
    mnt = os.path.join(str(tmp_path), 'vec.mnt')
    m = ru.Mount(cdir, mnt, pw)
    with m:
        names = os.listdir(mnt)
        assert 'crafted-ok' in names          # the positive control
        assert 'hello.txt' in names
        for n in names:
            assert n not in ('.', '..') and '/' not in n and '\0' not in n
        # raw readdir: exactly one "." and one ".."
        ls = subprocess.run(['ls', '-1fa', mnt], stdout=subprocess.PIPE,
                            check=True).stdout.split(b'\n')
        assert ls.count(b'.') == 1 and ls.count(b'..') == 1, ls
        assert not any(b'/' in x for x in ls)
        assert sorted(x.decode() for x in ls if x and x not in (b'.', b'..')
                      ) == sorted(names)
        # all of them hidden and counted: one log line per listing
        text = m.log()
        counts = [int(x) for x in re.findall(r'hiding (\d+) entries', text)]
        assert counts and min(counts) == len(crafted) + 1, text
        # the parent is still the parent
        assert os.path.samestat(os.stat(os.path.join(mnt, 'sub', '..')),
                                os.stat(mnt))


# ---- regressions of gocryptfs data-loss bugs ----

def test_concurrent_create_unlink_inode_reuse(tmp_path):
    """gocryptfs #363: a new file that gets a just-freed inode number must
    not inherit the old file's cached state (file ID, size)."""
    errors = []

    def worker(tid):
        try:
            for k in range(250):
                p = os.path.join(m.mnt, 't%d_%d' % (tid, k % 3))
                want = ru.pattern(tid * 1000 + k, 1 + (k * 997) % 9000)
                with open(p, 'wb') as f:
                    f.write(want)
                with open(p, 'rb') as f:
                    got = f.read()
                if got != want:
                    errors.append('thread %d iter %d: content differs'
                                  % (tid, k))
                    return
                os.unlink(p)
        except OSError as e:
            errors.append('thread %d: %r' % (tid, e))

    with ru.new_fs(tmp_path) as m:
        ts = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errors, errors
        assert os.listdir(m.mnt) == []


@pytest.mark.parametrize('sizes', [(5000, 3000, 4200, 4095),
                                   (4096, 4095, 8193, 1),
                                   (12288, 4097, 4097, 4096),
                                   (9000, 100, 6000, 0)])
def test_write_shrink_write_shrink(tmp_path, sizes):
    """gocryptfs #1024 pattern: write >= 4096 B, shrink, write, shrink."""
    w1, t1, w2, t2 = sizes
    model = bytearray(ru.pattern(11, w1))
    m = ru.new_fs(tmp_path)
    with m:
        p = os.path.join(m.mnt, 'f')
        fd = os.open(p, os.O_RDWR | os.O_CREAT)
        os.pwrite(fd, bytes(model), 0)
        os.ftruncate(fd, t1)
        del model[t1:]
        chunk = ru.pattern(12, w2 - 10)
        os.pwrite(fd, chunk, 10)
        model[10:w2] = chunk
        assert os.fstat(fd).st_size == len(model)
        os.ftruncate(fd, t2)
        del model[t2:]
        assert os.pread(fd, 20000, 0) == bytes(model)
        os.close(fd)
        assert ru.read_file(p) == bytes(model)
    with m:
        assert ru.read_file(os.path.join(m.mnt, 'f')) == bytes(model)


def test_sizes_after_hardlink_and_new_symlink(tmp_path):
    """gocryptfs #724 (size right after link) and #574 (size of a new
    symlink)."""
    with ru.new_fs(tmp_path) as m:
        p = os.path.join(m.mnt, 'f')
        with open(p, 'wb') as f:
            f.write(b'y' * 5000)
        os.link(p, p + '.2')
        st = os.stat(p + '.2')
        assert (st.st_size, st.st_nlink) == (5000, 2)
        assert os.stat(p).st_size == 5000
        target = 'some/target/' + 'x' * 25
        os.symlink(target, os.path.join(m.mnt, 'l'))
        st = os.lstat(os.path.join(m.mnt, 'l'))
        assert st.st_size == len(target)
        assert os.readlink(os.path.join(m.mnt, 'l')) == target
        with open(p + '.2', 'ab') as f:
            f.write(b'z' * 10)
        assert os.stat(p).st_size == 5010


def test_concurrent_truncate_and_read(tmp_path):
    """Reads racing with truncate + rewrite never fail (no torn block) and
    return only bytes that were written, or zeros where the kernel fills a
    read that came back short."""
    n = 64 * 1024 + 123
    pat = ru.pattern(21, n)
    stop = threading.Event()
    errors = []

    def truncater(p):
        fd = os.open(p, os.O_RDWR)
        try:
            k = 0
            while not stop.is_set():
                s = (k * 7919) % n
                os.ftruncate(fd, s)
                os.pwrite(fd, pat[s:], s)
                k += 1
        except OSError as e:
            errors.append('truncater: %r' % e)
        finally:
            os.close(fd)

    def reader(p, direct):
        # O_DIRECT reads are not serialised by page locks: they reach the
        # daemon while it is in the middle of a truncate or a rewrite
        buf = mmap.mmap(-1, n + 4096)
        flags = os.O_RDONLY | (os.O_DIRECT if direct else 0)
        try:
            deadline = time.time() + 3
            while time.time() < deadline:
                fd = os.open(p, flags)
                k = os.preadv(fd, [buf], 0)
                os.close(fd)
                got = buf[:k]
                if got == pat[:k]:
                    continue
                # the kernel zero-fills past a read that came back short
                # because the daemon had already truncated: zeros are fine,
                # other bytes are not
                for o in range(0, k, 4096):
                    c = got[o:o + 4096]
                    if c == pat[o:o + len(c)] or not any(c):
                        continue
                    i = next((o + i for i in range(len(c))
                              if c[i] != pat[o + i] and c[i] != 0), None)
                    if i is None:
                        continue
                    errors.append('reader: %d bytes, byte %d is %d not %d'
                                  % (k, i, got[i], pat[i]))
                    return
        except OSError as e:
            errors.append('reader: %r' % e)

    with ru.new_fs(tmp_path) as m:
        p = os.path.join(m.mnt, 'f')
        with open(p, 'wb') as f:
            f.write(pat)
        t = threading.Thread(target=truncater, args=(p,))
        rs = [threading.Thread(target=reader, args=(p, d))
              for d in (True, False)]
        t.start()
        for r in rs:
            r.start()
        for r in rs:
            r.join()
        stop.set()
        t.join()
        assert not errors, errors[:5]
        assert ru.read_file(p) == pat
