# SPDX-License-Identifier: MIT
"""Every flag that gocryptfs 2.3 lists in `gocryptfs -hh`, walked one by one,
so that none is ever again accepted and silently ignored. Each flag has a
disposition here: the test that shows it does what gocryptfs does; or a
note that veilfs prints when it accepts a flag without effect; or the
open issue that brings it. The walk fails when gocryptfs's list and this
table differ, when veilfs does not parse a flag the way gocryptfs does
(with or without a value), when `veilfs -hh` or the man page leave one out,
when a named test is gone or no longer mentions its flag, and when a flag
that an open issue still owns turns up without a disposition. The bash
completion is checked here too: it completes from the same list."""

import ast
import json
import os
import re
import subprocess

import pytest

import util

HERE = os.path.dirname(__file__)
MAN = os.path.join(util.SRC_DIR, "man", "veilfs.1")
COMPLETION = os.path.join(util.SRC_DIR, "completion", "veilfs")


def T(path, func):
    return ("test", path, func)


NOTE = ("note",)

# flag -> disposition
DISPOSITION = {
    "acl": T("test_mount_flags.py",
             "test_acl_enforced_stored_plain_and_read_by_gocryptfs"),
    "aessiv": T("test_cli.py", "test_mount_masterkey_flags"),
    "allow_other": T("test_fs_options.py",
                     "test_allow_other_implies_default_permissions"),
    "badname": T("test_fs_badname.py",
                 "test_badname_listing_like_gocryptfs"),
    "config": T("test_cli.py", "test_info_reverse_with_config"),
    "cpuprofile": NOTE,
    "ctlsock": T("test_ctlsock.py", "test_xray_gets_gocryptfs_answers"),
    "d": T("test_mount_flags.py", "test_fusedebug_and_debug"),
    "debug": ("alias", "d"),
    "deterministic-names": T("test_cli.py", "test_mount_masterkey_flags"),
    "dev": T("test_mount_flags.py", "test_device_files"),
    "e": ("alias", "exclude"),
    "ew": ("alias", "exclude-wildcard"),
    "exclude": T("test_reverse.py", "test_exclude_same_as_gocryptfs"),
    "exclude-from": T("test_reverse.py", "test_exclude_same_as_gocryptfs"),
    "exclude-wildcard": T("test_reverse.py",
                          "test_exclude_same_as_gocryptfs"),
    "devrandom": NOTE,
    "exec": T("test_mount_flags.py", "test_noexec_script_does_not_run"),
    "extpass": T("test_cli.py", "test_extpass"),
    "f": ("alias", "fg"),
    "fg": T("test_cli.py", "test_mount_foreground_and_impl"),
    "fido2": T("test_mount_flags.py", "test_fido2"),
    "force_owner": T("test_mount_flags.py",
                     "test_force_owner_seen_by_another_uid"),
    "forcedecode": NOTE,
    "fsck": T("test_fsck_run.py", "test_fsck_out_vector"),
    "fsname": T("test_fs_options.py", "test_fsname_and_fuse_options"),
    "fusedebug": T("test_mount_flags.py", "test_fusedebug_and_debug"),
    "hh": T("test_flag_list.py", "test_every_gocryptfs_flag"),
    "hkdf": T("test_mount_flags.py", "test_masterkey_format_flags_as_gocryptfs"),
    "i": T("test_mount_flags.py", "test_idle_unmounts_within_5s"),
    "idle": T("test_mount_flags.py", "test_idle_unmounts_within_5s"),
    "info": T("test_cli.py", "test_info_matches_gocryptfs"),
    "init": T("test_cli.py", "test_init_accepted_by_gocryptfs"),
    "kernel_cache": T("test_mount_flags.py", "test_kernel_cache"),
    "ko": T("test_mount_flags.py",
            "test_kernel_options_and_precedence_as_gocryptfs"),
    "longnamemax": T("test_cli.py", "test_mount_masterkey_flags"),
    "longnames": T("test_mount_flags.py", "test_longnames_false_needs_support"),
    "masterkey": T("test_cli.py", "test_mount_masterkey_flags"),
    "memprofile": NOTE,
    "nodev": T("test_mount_flags.py", "test_device_files"),
    "noexec": T("test_mount_flags.py", "test_noexec_script_does_not_run"),
    "nofail": NOTE,
    "nonempty": T("test_fs_options.py",
                  "test_nonempty_mountpoint_refused_then_allowed"),
    "noprealloc": T("test_reliability_fsx.py", "test_fsx_noprealloc"),
    "nosuid": T("test_mount_flags.py", "test_suid_binary_run_by_another_user"),
    "nosyslog": T("test_mount_flags.py", "test_notifypid"),
    "notifypid": T("test_mount_flags.py", "test_notifypid"),
    "o": T("test_fs_options.py", "test_fsname_and_fuse_options"),
    "one-file-system": T("test_reverse.py", "test_one_file_system"),
    "openssl": T("test_mount_flags.py", "test_openssl"),
    "passfile": T("test_cli.py", "test_passfile_concatenated"),
    "passwd": T("test_cli.py", "test_passwd"),
    "plaintextnames": T("test_cli.py", "test_mount_masterkey_flags"),
    "q": T("test_cli.py", "test_init_quiet"),
    "quiet": ("alias", "q"),
    "raw64": T("test_mount_flags.py", "test_masterkey_format_flags_as_gocryptfs"),
    "reverse": T("test_reverse.py", "test_view_same_as_gocryptfs"),
    "ro": T("test_mount_flags.py",
            "test_kernel_options_and_precedence_as_gocryptfs"),
    "rw": T("test_mount_flags.py",
            "test_kernel_options_and_precedence_as_gocryptfs"),
    "scryptn": T("test_cli.py", "test_passwd_bad_scryptn"),
    "serialize_reads": T("test_mount_flags.py", "test_serialize_reads"),
    "sharedstorage": T("test_net_backings.py",
                       "test_shared_concurrent_writers"),
    "speed": T("test_cli.py", "test_speed"),
    "suid": T("test_mount_flags.py", "test_suid_binary_run_by_another_user"),
    "trace": NOTE,
    "version": T("test_cli.py", "test_help_and_version"),
    "wpanic": T("test_mount_flags.py", "test_wpanic_exits_on_a_warning"),
    "xchacha": T("test_cli.py", "test_mount_masterkey_flags"),
    "zerokey": T("test_mount_flags.py",
                 "test_masterkey_format_flags_as_gocryptfs"),
    # A flag an open issue brings gets ("pending", "#N"): while veilfs
    # does not know it, it is refused as an unknown flag (exit 1); once it
    # knows it, this test fails until the flag gets a disposition above.
}

SAMPLE = {"openssl": "auto", "force_owner": "1:2", "idle": "1s", "i": "1s",
          "longnamemax": "100", "scryptn": "10", "notifypid": "1",
          "ko": "noatime"}


def gocryptfs_flags(gocryptfs):
    """(name, takes a value) for each line of gocryptfs -hh."""
    p = subprocess.run([gocryptfs, "-hh"], capture_output=True, timeout=60)
    text = (p.stdout + p.stderr).decode()
    out = {}
    for line in text.splitlines():
        m = re.match(r"^\s+--([\w-]+)(?: (\w+))?(?:\s{2,}|\s*$)", line)
        if m:
            out[m.group(1)] = m.group(2) is not None
    assert len(out) > 60, text
    return out


def _veilfs_hh():
    p = subprocess.run([util.VEILFS_BIN, "-hh"], capture_output=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    out = {}
    for line in p.stdout.decode().splitlines():
        m = re.match(r"^  -(\S+)( \S+)?\s{2,}(.*)$", line)
        if m:
            out[m.group(1)] = (m.group(2) is not None, m.group(3))
    return out


def _segment(lines, node):
    """Source of a top-level node, its decorators included."""
    first = min([node.lineno] + [d.lineno for d in
                                 getattr(node, "decorator_list", [])])
    return "\n".join(lines[first - 1:node.end_lineno])


def _functions_of(path):
    with open(os.path.join(HERE, path)) as f:
        src = f.read()
    lines = src.splitlines()
    return {n.name: _segment(lines, n) for n in ast.parse(src).body
            if isinstance(n, ast.FunctionDef)}


def parse_ok(flag, value):
    """veilfs parses the flag (and value): -version then exits 0."""
    argv = [util.VEILFS_BIN, "-" + flag] + ([value] if value else []) + \
        ["-version"]
    return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=60)


def test_every_gocryptfs_flag(gocryptfs):
    flags = gocryptfs_flags(gocryptfs)
    assert sorted(flags) == sorted(DISPOSITION), \
        "gocryptfs -hh and this table differ: %s" % sorted(
            set(flags) ^ set(DISPOSITION))
    hh = _veilfs_hh()
    with open(MAN) as f:
        man = f.read()
    problems = []
    for flag, value in sorted(flags.items()):
        kind = DISPOSITION[flag]
        sample = SAMPLE.get(flag, "x") if value else None
        p = parse_ok(flag, sample)
        err = p.stderr.decode()
        if kind[0] == "pending":
            if p.returncode == 0 or "unknown flag" not in err:
                problems.append("-%s is known now: give it a disposition "
                                "(was pending on %s)" % (flag, kind[1]))
            continue
        if p.returncode != 0:
            problems.append("-%s %s: not accepted: %s"
                            % (flag, sample or "", err.strip()))
            continue
        if flag not in hh:
            problems.append("-%s missing from veilfs -hh" % flag)
        elif hh[flag][0] != value:
            problems.append("-%s: takes a value in %s only" % (
                flag, "gocryptfs" if value else "veilfs"))
        if not re.search(r"Fl %s(\s|$)" % re.escape(flag), man):
            problems.append("-%s is not in man/veilfs.1" % flag)
        if kind[0] == "note":
            if "-%s:" % flag not in err:
                problems.append("-%s is accepted without a note" % flag)
        elif kind[0] == "alias":
            a, b = hh.get(flag, (0, ""))[1], hh.get(kind[1], (0, ""))[1]
            if "Alias for -" + kind[1] not in a and \
                    "Alias for -" + flag not in b:
                problems.append("-%s: -hh does not say it is -%s"
                                % (flag, kind[1]))
        elif kind[0] == "test":
            fns = _functions_of(kind[1])
            if kind[2] not in fns:
                problems.append("-%s: %s::%s is gone" % (flag, *kind[1:]))
            elif not re.search(r"[\"']-%s\b" % re.escape(flag),
                               fns[kind[2]] + _module_consts(kind[1])):
                problems.append("-%s: %s::%s does not use it"
                                % (flag, *kind[1:]))
        if kind[0] != "note" and "-%s:" % flag in err:
            problems.append("-%s prints a note but has a behaviour test"
                            % flag)
    assert not problems, "\n".join(problems)


def _module_consts(path):
    """Module-level tables and helpers (_name) a test may take its flags
    from, as text."""
    with open(os.path.join(HERE, path)) as f:
        src = f.read()
    lines = src.splitlines()
    return "\n".join(_segment(lines, n) for n in ast.parse(src).body
                     if isinstance(n, ast.Assign) or
                     (isinstance(n, ast.FunctionDef) and
                      n.name.startswith("_")))


def test_no_flag_is_ignored_silently():
    """Beyond gocryptfs's list: every flag veilfs's own table has is in
    the man page, and the table holds no flag that is dropped without a
    word."""
    hh = _veilfs_hh()
    with open(MAN) as f:
        man = f.read()
    missing = [f for f in hh if not re.search(r"Fl %s(\s|$)" % re.escape(f),
                                              man)]
    assert not missing, missing
    src = open(os.path.join(util.SRC_DIR, "src", "cli", "args.c")).read()
    ignored = re.findall(r'\{ "([\w-]+)", F_IGN_\w+', src)
    assert ignored == [], ignored


def _complete(words):
    script = ('source "$1"; shift; COMP_WORDS=("$@"); '
              'COMP_CWORD=$(($# - 1)); _veilfs; '
              'printf "%s\\n" "${COMPREPLY[@]}"')
    p = subprocess.run(["bash", "-c", script, "bash", COMPLETION] + words,
                       capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return [x for x in p.stdout.decode().split("\n") if x]


def test_bash_completion(tmp_path):
    assert subprocess.run(["bash", "-n", COMPLETION]).returncode == 0
    v = util.VEILFS_BIN
    assert _complete([v, "-kernel_c"]) == ["-kernel_cache"]
    assert _complete([v, "--ctl"]) == ["--ctlsock"]
    assert sorted(_complete([v, "-nos"])) == ["-nosuid", "-nosyslog"]
    assert _complete([v, "-openssl", "f"]) == ["false"]
    util.write_file(str(tmp_path / "pwfile"), b"x")
    os.mkdir(str(tmp_path / "pwdir"))
    assert _complete([v, "-passfile", str(tmp_path / "pwf")]) == \
        [str(tmp_path / "pwfile")]
    assert _complete([v, str(tmp_path / "pw")]) == [str(tmp_path / "pwdir")]
    # every flag of -hh completes
    every = _complete([v, "-"])
    assert sorted(every) == sorted("-" + f for f in _veilfs_hh())


def test_completion_is_installed():
    p = subprocess.run(["meson", "introspect", "--installed", util.BUILD_DIR],
                       capture_output=True, timeout=60)
    if p.returncode != 0:
        pytest.skip("no meson build directory: %s" % p.stderr.decode())
    installed = json.loads(p.stdout)
    dest = [d for s, d in installed.items()
            if os.path.realpath(s) == os.path.realpath(COMPLETION)]
    assert dest and dest[0].endswith(
        "/share/bash-completion/completions/veilfs"), installed
