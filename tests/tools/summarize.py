#!/usr/bin/python3
"""Count test results of one or more meson build dirs.

For each build dir, reads meson-logs/testlog.json: a TAP test contributes
its subtests (ok / not ok / # SKIP lines), any other test counts as one;
the pytest test ("integration") contributes the cases of the junit XML file
BUILD/pytest-junit.xml instead of itself. Prints per-dir lines and returns
the totals; with --final prints the one closing line 'N passed, N failed,
N skipped'.
"""
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

TAP = re.compile(r"^(not ok|ok)\b(.*)$")


def count_tap(text):
    p = f = s = 0
    for line in text.splitlines():
        m = TAP.match(line)
        if not m:
            continue
        if "# SKIP" in m.group(2).upper():
            s += 1
        elif m.group(1) == "ok":
            p += 1
        else:
            f += 1
    return p, f, s


def count_junit(path):
    p = f = s = 0
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        kinds = {c.tag for c in case}
        if "failure" in kinds or "error" in kinds:
            f += 1
        elif "skipped" in kinds:
            s += 1
        else:
            p += 1
    return p, f, s


def count_dir(build):
    p = f = s = 0
    log = os.path.join(build, "meson-logs", "testlog.json")
    if not os.path.exists(log):
        return 0, 1, 0  # a stage that ran nothing is a failure
    with open(log) as fh:
        for line in fh:
            if not line.strip():
                continue
            t = json.loads(line)
            name = t.get("name", "")
            result = t.get("result", "")
            if name.endswith("integration"):
                junit = os.path.join(build, "pytest-junit.xml")
                if os.path.exists(junit):
                    jp, jf, js = count_junit(junit)
                    p, f, s = p + jp, f + jf, s + js
                    if result not in ("OK", "EXPECTEDFAIL") and jf == 0:
                        f += 1  # pytest crashed or timed out
                    continue
            if t.get("protocol") == "tap" or "ok 1" in (t.get("stdout") or ""):
                tp, tf, ts = count_tap(t.get("stdout") or "")
                if tp + tf + ts:
                    if result not in ("OK", "SKIP", "EXPECTEDFAIL") and tf == 0:
                        tf += 1
                    p, f, s = p + tp, f + tf, s + ts
                    continue
            if result in ("OK", "EXPECTEDFAIL"):
                p += 1
            elif result == "SKIP":
                s += 1
            else:
                f += 1
    return p, f, s


def main(argv):
    final = "--final" in argv
    dirs = [a for a in argv if not a.startswith("--")]
    tp = tf = ts = 0
    for d in dirs:
        p, f, s = count_dir(d)
        print(f"# {d}: {p} passed, {f} failed, {s} skipped")
        tp, tf, ts = tp + p, tf + f, ts + s
    extra = os.environ.get("VEILFS_EXTRA_COUNTS", "")
    for item in extra.split():
        p, f, s = (int(x) for x in item.split(":"))
        tp, tf, ts = tp + p, tf + f, ts + s
    if final:
        print(f"{tp} passed, {tf} failed, {ts} skipped")
    return 1 if tf or tp == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
