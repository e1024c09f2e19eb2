#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The file-count scaling tree of bench/run's scale rows: N empty files,
1,000 per directory (d0000/f0000000 ...), made and walked with plain system
calls so that every file costs the filesystem a lookup and a create or a
stat and nothing else. bench/run imports it; by hand it makes or walks such
a tree, e.g. for bench/profile:

    bench/scalegen.py create DIR N     # DIR must exist and be empty
    bench/scalegen.py stat DIR         # prints the number of files
"""

import os
import sys

PER_DIR = 1000


def ndirs(n):
	"""How many directories create(root, n) makes."""
	return (n + PER_DIR - 1) // PER_DIR


def create(root, n):
	"""Make n empty files in ndirs(n) directories below root (O_EXCL:
	fails on a tree that is already there)."""
	flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
	for d in range(ndirs(n)):
		dpath = os.path.join(root, "d%04d" % d)
		os.mkdir(dpath)
		for i in range(d * PER_DIR, min(n, (d + 1) * PER_DIR)):
			os.close(os.open(os.path.join(dpath, "f%07d" % i), flags,
					 0o644))


def stat_walk(root):
	"""lstat every entry below root (os.scandir, depth first); returns the
	number of non-directories."""
	files = 0
	todo = [root]
	while todo:
		with os.scandir(todo.pop()) as it:
			for e in it:
				e.stat(follow_symlinks=False)
				if e.is_dir(follow_symlinks=False):
					todo.append(e.path)
				else:
					files += 1
	return files


def main(argv):
	if len(argv) == 4 and argv[1] == "create":
		create(argv[2], int(argv[3]))
	elif len(argv) == 3 and argv[1] == "stat":
		print(stat_walk(argv[2]))
	else:
		sys.exit("usage: scalegen.py create DIR N | stat DIR")


if __name__ == "__main__":
	main(sys.argv)
