# SPDX-License-Identifier: MIT
"""Model-based random-operation tests (issue #6, point 1).

tests/tools/fsx applies one seeded random sequence of writes, truncates,
fallocates, reads, reopens, hard-link writes and renames to a file on the
veilfs mount and to a reference file on plain disk, comparing size and
content after every step. Once per cipher, single process
(VEILFS_FSX_OPS operations, default 20000), and with four processes on
their own files plus disjoint, block-sharing ranges of one shared file.
The seed is printed on failure (set VEILFS_SEED to replay it).
VEILFS_FSX_ARGS adds fsx flags (e.g. "-L" to skip hard links when checking
the harness against gocryptfs 2.3, which shows the ciphertext size right
after link(2), gocryptfs issue #724).
"""
import os
import subprocess

import pytest

import reliab_util as ru


def run_fsx(m, tmp_path, seed, ops, nproc=1, extra=()):
    ref = os.path.join(str(tmp_path), 'ref')
    os.makedirs(ref, exist_ok=True)
    cmd = [ru.tool('fsx'), '-S', str(seed), '-N', str(ops), '-p', str(nproc)]
    cmd += list(extra) + os.environ.get('VEILFS_FSX_ARGS', '').split()
    cmd += [m.mnt, ref]
    print('fsx command:', ' '.join(cmd))
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=1800)
    out = r.stdout.decode(errors='replace')
    print(out[-4000:])
    assert r.returncode == 0, ('fsx failed, seed %d (replay: VEILFS_SEED=%d)\n'
                               '%s\n--- daemon log ---\n%s'
                               % (seed, seed, out[-8000:], m.log()[-4000:]))


@pytest.mark.parametrize('cipher', sorted(ru.CIPHERS))
def test_fsx_single(tmp_path, cipher):
    seed = ru.base_seed()
    print('seed', seed)
    with ru.new_fs(tmp_path, cipher) as m:
        run_fsx(m, tmp_path, seed, ru.fsx_ops())


@pytest.mark.parametrize('cipher', sorted(ru.CIPHERS))
def test_fsx_multiprocess(tmp_path, cipher):
    seed = ru.base_seed()
    print('seed', seed)
    with ru.new_fs(tmp_path, cipher) as m:
        run_fsx(m, tmp_path, seed, max(ru.fsx_ops() // 8, 500), nproc=4)


def test_fsx_noprealloc(tmp_path):
    """The write path without preallocation gets the same model check."""
    seed = ru.base_seed()
    print('seed', seed)
    with ru.new_fs(tmp_path, 'gcm', mount_args=['-noprealloc']) as m:
        run_fsx(m, tmp_path, seed, max(ru.fsx_ops() // 4, 1000))


@ru.long_stage
@pytest.mark.parametrize('cipher', sorted(ru.CIPHERS))
def test_fsx_long(tmp_path, cipher):
    """Long stage (VEILFS_LONG=1): 3x the operations, 8 processes."""
    seed = ru.base_seed()
    print('seed', seed)
    with ru.new_fs(tmp_path, cipher) as m:
        run_fsx(m, tmp_path, seed, ru.fsx_ops() * 3)
        run_fsx(m, tmp_path, seed + 1, ru.fsx_ops() // 2, nproc=8)
