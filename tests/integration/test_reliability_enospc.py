# SPDX-License-Identifier: MIT
"""Full disk (issue #6, point 3): CIPHERDIR on an 8 MiB tmpfs, and on a
16 MiB ext4 image (delayed allocation: veilfs writes differently there, see
src/fs/file.c reserve_and_ack and write_across_end). Writing until
the disk is full must give the writer ENOSPC (never EIO); every earlier file
still reads; the file being written reads back everything acknowledged.
Preallocation (the default) must also protect the last block of a file
whose append fails for lack of space: without it, the read-modify-write of
that block would be overwritten in place by a write that then cannot
complete. With -noprealloc (gocryptfs's switch) the same scenario may
destroy that block, which is what the option costs; the test then only
checks the other guarantees.

Needs root (mount -t tmpfs).
"""
import errno
import os
import re

import pytest

import reliab_util as ru
import util


@pytest.fixture(params=['tmpfs', 'ext4'])
def small_disk(request, tmp_path):
    if request.param == 'tmpfs':
        with util.tmpfs(tmp_path, "8m") as d:
            yield d
    else:
        with util.ext4(tmp_path, 16 << 20) as d:
            yield d


def fill(path, acked_model, strict, limit=None):
    """Write until even 1-byte appends fail. Every failure must be ENOSPC
    (strict), or at least the first one (without preallocation a failed
    write may already have destroyed the last block, so a later
    read-modify-write of it can see EIO). More than limit bytes
    acknowledged fails the test (a disk of that size cannot hold them).
    Returns the number of acknowledged bytes."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    acked = 0
    errs = []
    try:
        for chunk in (256 * 1024, 4096, 1):
            fails = 0
            while fails < 3:
                data = acked_model(acked, chunk)
                try:
                    n = os.write(fd, data)
                except OSError as e:
                    errs.append(e.errno)
                    fails += 1
                    continue
                acked += n
                assert limit is None or acked <= limit, \
                    '%d bytes acknowledged on a disk of %d' % (acked, limit)
    finally:
        os.close(fd)
    names = [errno.errorcode.get(e, e) for e in errs]
    print('write errors while filling:', names)
    assert errs[0] == errno.ENOSPC, 'first failure %s, not ENOSPC' % names[0]
    if strict:
        assert set(errs) == {errno.ENOSPC}, 'writer got %s' % names
    return acked


@pytest.mark.parametrize('prealloc', [True, False],
                         ids=['prealloc', 'noprealloc'])
def test_full_disk(tmp_path, small_disk, prealloc):
    cdir = os.path.join(small_disk, 'c')
    args = [] if prealloc else ['-noprealloc']
    m = ru.new_fs(tmp_path, 'gcm', cipherdir=cdir, mount_args=args)
    earlier = {'e%d' % k: ru.pattern(k, 40000 + k * 777) for k in range(8)}
    xdata = ru.pattern(99, 1000)   # a partial last block
    big = ru.pattern(5, 1 << 20)

    def model(off, n):
        return (big * (1 + (off + n) // len(big)))[off:off + n]

    with m:
        for name, data in earlier.items():
            with open(os.path.join(m.mnt, name), 'wb') as f:
                f.write(data)
        with open(os.path.join(m.mnt, 'x'), 'wb') as f:
            f.write(xdata)
        fpath = os.path.join(m.mnt, 'filler')
        acked = fill(fpath, model, prealloc)
        print('acknowledged', acked, 'bytes before ENOSPC')
        assert acked > 4 << 20
        # append to x: there is no room for a new block
        with pytest.raises(OSError) as ei:
            with open(os.path.join(m.mnt, 'x'), 'ab') as f:
                f.write(ru.pattern(100, 100000))
        assert ei.value.errno == errno.ENOSPC or not prealloc, ei.value
        for name, data in earlier.items():
            assert ru.read_file(os.path.join(m.mnt, name)) == data, name
        if prealloc:
            # failed appends were undone: nothing past what was acknowledged
            assert os.path.getsize(fpath) == acked
            with open(fpath, 'rb') as f:
                assert f.read(acked) == model(0, acked)
        if prealloc:
            # the failed append left x's last block intact
            assert ru.read_file(os.path.join(m.mnt, 'x')) == xdata
        else:
            try:
                ok = ru.read_file(os.path.join(m.mnt, 'x')) == xdata
            except OSError as e:
                ok = e
            print('-noprealloc: x after the failed append:', ok)
        # free space and carry on
        os.unlink(fpath)
        with open(os.path.join(m.mnt, 'e0'), 'ab') as f:
            f.write(b'more')
        earlier['e0'] += b'more'
        if prealloc:
            with open(os.path.join(m.mnt, 'x'), 'ab') as f:
                f.write(b'tail')
            xdata += b'tail'
    with m:
        for name, data in earlier.items():
            assert ru.read_file(os.path.join(m.mnt, name)) == data, name
        if prealloc:
            assert ru.read_file(os.path.join(m.mnt, 'x')) == xdata


def _leave_free(backing, keep):
    """Fill backing with a filler file, then give back keep bytes."""
    path = os.path.join(backing, 'filler')
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    total = 0
    try:
        for chunk in (1 << 20, 65536, 4096):
            while True:
                try:
                    total += os.write(fd, b'f' * chunk)
                except OSError as e:
                    assert e.errno == errno.ENOSPC, e
                    break
        os.ftruncate(fd, max(0, total - keep))
    finally:
        os.close(fd)
    return path


def _file_written_and_closed(m, data):
    """Write data to file f of Mount m in a mount of its own (so that the
    next mount has no kept tail of it); return data."""
    with m:
        with open(os.path.join(m.mnt, 'f'), 'wb') as f:
            f.write(data)
    return data


@pytest.mark.parametrize('prealloc', [True, False],
                         ids=['prealloc', 'noprealloc'])
@pytest.mark.parametrize('case', ['across_end', 'past_a_gap'])
def test_failed_write_leaves_file_as_it_was(tmp_path, prealloc, case):
    """A write that fails for lack of space leaves the file exactly as it
    was, with or without preallocation: one that overwrites the partial
    last block of a file (reopened, so not veilfs's kept tail) and goes
    on past its end (it once left the file longer, with a torn block past
    the old end, under -noprealloc), and one that starts blocks past the
    end (the old last block's zero padding once stayed: 5,000 bytes
    became 8,192)."""
    with util.tmpfs(tmp_path, "4m") as disk:
        cdir = os.path.join(disk, 'c')
        args = [] if prealloc else ['-noprealloc']
        m = ru.new_fs(tmp_path, 'gcm', cipherdir=cdir, mount_args=args)
        old = _file_written_and_closed(m, ru.pattern(7, 5000))
        with m:
            p = os.path.join(m.mnt, 'f')
            assert ru.read_file(p) == old   # page cache warm
            filler = _leave_free(disk, 40 * 1024 if case == 'across_end'
                                 else 6 * 1024)
            fd = os.open(p, os.O_RDWR)
            try:
                with pytest.raises(OSError) as ei:
                    if case == 'across_end':
                        os.pwrite(fd, ru.pattern(8, 200000), 4500)
                    else:
                        os.pwrite(fd, ru.pattern(8, 100000), 102400)
                assert ei.value.errno == errno.ENOSPC, ei.value
            finally:
                os.close(fd)
            os.unlink(filler)
            assert os.path.getsize(p) == len(old)
            assert ru.read_file(p) == old
        with m:
            assert ru.read_file(os.path.join(m.mnt, 'f')) == old


ACK_ROOM = 256 << 20   # src/fs/file.c: free space needed for an early answer


def test_early_answers_stop_before_the_disk_is_full(tmp_path):
    """On ext4 (delayed allocation, no quotas) a write past the end is
    answered before it is written while the backing has 256 MiB free
    beyond it, and when written nearer a full disk: a writer that fills a
    disk larger than that gets its ENOSPC from write() itself, close and
    fsync report nothing afterwards, and every acknowledged byte is there.
    The -d summary shows that early answers did happen first."""
    size = ACK_ROOM + (96 << 20)
    with util.ext4(tmp_path, size, block=4096) as disk:
        cdir = os.path.join(disk, 'c')
        m = ru.new_fs(tmp_path, 'gcm', cipherdir=cdir, mount_args=['-d'])
        big = ru.pattern(11, 1 << 20)

        def model(off, n):
            return (big * (2 + n // len(big)))[off % len(big):][:n]

        with m:
            fpath = os.path.join(m.mnt, 'filler')
            acked = fill(fpath, model, True, size)
            assert acked > ACK_ROOM, acked
            fd = os.open(fpath, os.O_RDONLY)
            try:
                os.fsync(fd)  # no error kept back from an answered write
                assert os.fstat(fd).st_size == acked
                off = 0
                while off < acked:
                    got = os.pread(fd, 1 << 20, off)
                    assert got == model(off, len(got)), off
                    off += len(got)
            finally:
                os.close(fd)
        log = m.log()
        assert 'failed after it was acknowledged' not in log, log[-2000:]
        counts = re.findall(r'answered before they were written: '
                            r'(\d+) on a reservation, (\d+) on free space',
                            log)
        assert counts, 'no summary in the -d log'
        assert int(counts[-1][1]) > 0, counts


def _fault_dir(tmp_path):
    """A new directory for tests/tools/faultshim's control files."""
    faults = os.path.join(str(tmp_path), 'faults')
    os.mkdir(faults)
    return faults


def _faulty_fs(tmp_path, disk, faults):
    """A new cipherdir DISK/c whose daemon runs under tests/tools/faultshim,
    with its control files in FAULTS."""
    m = ru.new_fs(tmp_path, 'gcm', cipherdir=os.path.join(disk, 'c'))
    m.env = {'LD_PRELOAD': ru.tool('faultshim.so'), 'VEILFS_FAULT_DIR': faults}
    if os.environ.get('VEILFS_SANITIZED'):
        m.env['ASAN_OPTIONS'] = (os.environ.get('ASAN_OPTIONS', '') +
                                 ':verify_asan_link_order=0')
    return m


def test_failed_early_answer_keeps_the_padded_block(tmp_path):
    """A write past the end of a file with a partial last block pads that
    block first; on ext4 it is then answered before it is written. If
    that write fails afterwards and the old ciphertext of the padded block
    could not be read to be put back (two faults, made here by
    tests/tools/faultshim), the file is cut back to the end of the padded
    block, not into it: every byte written before reads back, the padding
    reads as zeros, and fsync reports the failure. (Cutting to the old
    size once left the padded block torn: EIO on bytes 8192-9999.)"""
    faults = _fault_dir(tmp_path)
    with util.ext4(tmp_path, ACK_ROOM + (64 << 20), block=4096) as disk:
        m = _faulty_fs(tmp_path, disk, faults)
        old = _file_written_and_closed(m, ru.pattern(21, 10000))
        with m:
            p = os.path.join(m.mnt, 'f')
            fd = os.open(p, os.O_RDWR)
            try:
                for what in ('pread', 'pwrite'):
                    open(os.path.join(faults, what), 'w').close()
                try:
                    os.pwrite(fd, ru.pattern(22, 128 << 10), 12288)
                    with pytest.raises(OSError) as ei:
                        os.fsync(fd)
                    assert ei.value.errno == errno.ENOSPC, ei.value
                except OSError as e:  # answered only when written
                    assert e.errno == errno.ENOSPC, e
                assert os.listdir(faults) == [], 'a fault was not made'
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                got = os.pread(fd, 1 << 20, 0)
            finally:
                os.close(fd)
            assert got[:len(old)] == old
            assert got[len(old):] == bytes(len(got) - len(old))
            assert len(got) in (len(old), 12288), len(got)
        assert 'faultshim: pread' in m.log() and \
            'faultshim: pwrite' in m.log(), m.log()[-2000:]
        with m:
            got = ru.read_file(os.path.join(m.mnt, 'f'))
            assert got[:len(old)] == old and len(got) in (len(old), 12288)


def test_every_descriptor_hears_of_a_failed_early_answer(tmp_path):
    """A write answered before it was written that then fails (made here by
    tests/tools/faultshim) is reported by fsync once to every descriptor
    that was open when it failed, as Linux reports writeback errors, not
    only to the first one that asks: a program's fsync must not succeed
    because another program's fsync took the error first. A descriptor
    opened afterwards hears of it only if nobody did."""
    faults = _fault_dir(tmp_path)

    def fail_next_write(fd):
        open(os.path.join(faults, 'pwrite'), 'w').close()
        # a write of whole blocks at the end: answered before it is written
        os.pwrite(fd, ru.pattern(32, 128 << 10), os.fstat(fd).st_size)

    def fsync_error(fd):
        try:
            os.fsync(fd)  # waits for a write in progress
        except OSError as e:
            return e.errno
        finally:
            assert os.listdir(faults) == [], 'the fault was not made'
        return 0

    with util.ext4(tmp_path, ACK_ROOM + (64 << 20), block=4096) as disk:
        m = _faulty_fs(tmp_path, disk, faults)
        old = _file_written_and_closed(m, ru.pattern(31, 8192))
        with m:
            p = os.path.join(m.mnt, 'f')
            a, b = os.open(p, os.O_RDWR), os.open(p, os.O_RDWR)
            try:
                fail_next_write(a)
                assert fsync_error(b) == errno.ENOSPC
                assert fsync_error(a) == errno.ENOSPC
                assert fsync_error(a) == 0
                assert fsync_error(b) == 0
                c = os.open(p, os.O_RDONLY)
                assert fsync_error(c) == 0   # seen already
                os.close(c)
                fail_next_write(a)
                os.close(a)
                a = os.open(p, os.O_WRONLY)
                assert fsync_error(a) == errno.ENOSPC  # nobody had seen it
                assert fsync_error(b) == errno.ENOSPC
                assert fsync_error(b) == 0
            finally:
                os.close(a)
                os.close(b)
            assert ru.read_file(p) == old
        assert m.log().count('faultshim: pwrite') == 2, m.log()[-2000:]


@pytest.mark.parametrize('backing', ['tmpfs', 'ext4'])
def test_failed_early_answer_leaves_the_size(tmp_path, backing):
    """A write of whole blocks past the end, answered before it was
    written (on tmpfs once fallocate reserved its space, on ext4 once the
    file was extended over a hole) that then fails (tests/tools/faultshim)
    leaves the file at its old size and content, and fsync reports it (on
    tmpfs the reserved space once stayed: zeros up to the write's end)."""
    faults = _fault_dir(tmp_path)
    with (util.tmpfs(tmp_path, '512m') if backing == 'tmpfs' else
          util.ext4(tmp_path, ACK_ROOM + (64 << 20), block=4096)) as disk:
        m = _faulty_fs(tmp_path, disk, faults)
        old = _file_written_and_closed(m, ru.pattern(41, 8192))
        with m:
            p = os.path.join(m.mnt, 'f')
            fd = os.open(p, os.O_RDWR)
            try:
                open(os.path.join(faults, 'pwrite'), 'w').close()
                os.pwrite(fd, ru.pattern(42, 128 << 10), 8192)
                with pytest.raises(OSError) as ei:
                    os.fsync(fd)
                assert ei.value.errno == errno.ENOSPC, ei.value
                assert os.listdir(faults) == [], 'the fault was not made'
                assert os.fstat(fd).st_size == len(old)
            finally:
                os.close(fd)
            assert os.path.getsize(p) == len(old)
            assert ru.read_file(p) == old
        with m:
            assert ru.read_file(os.path.join(m.mnt, 'f')) == old


@pytest.mark.parametrize('to', [5000, 100])
def test_failed_shrink_keeps_the_file(tmp_path, to):
    """A truncate to a size inside a block re-encrypts that block shorter.
    If writing it fails (made here by tests/tools/faultshim; a full disk
    on a backing that copies on write, a server's quota), truncate reports
    the error and the file is as it was (the block was once cut off
    first: the bytes before the new size in it were lost)."""
    faults = _fault_dir(tmp_path)
    with util.tmpfs(tmp_path, '64m') as disk:
        m = _faulty_fs(tmp_path, disk, faults)
        old = _file_written_and_closed(m, ru.pattern(51, 10000))
        with m:
            p = os.path.join(m.mnt, 'f')
            open(os.path.join(faults, 'pwrite_small'), 'w').close()
            with pytest.raises(OSError) as ei:
                os.truncate(p, to)
            assert ei.value.errno == errno.ENOSPC, ei.value
            assert os.listdir(faults) == [], 'the fault was not made'
            assert os.path.getsize(p) == len(old)
            assert ru.read_file(p) == old
            os.truncate(p, to)
            assert ru.read_file(p) == old[:to]
        with m:
            assert ru.read_file(os.path.join(m.mnt, 'f')) == old[:to]
