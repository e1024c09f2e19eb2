#!/bin/sh
# SPDX-License-Identifier: MIT
# Build the libFuzzer targets with clang (ASan + UBSan + fuzzer) and run each
# one for SECONDS (default 60), seeded from the gocryptfs 2.3 vectors.
# usage: tests/fuzz/run.sh [SECONDS] [BUILDDIR]
# The corpora grown are kept in BUILDDIR/fuzz-corpus/<target> for the next run.
# Exit 0 if no target found anything; 1 otherwise (crash inputs are left as
# BUILDDIR/fuzz-out/<target>-crash-*, reproduce with BUILDDIR/tests/fuzz/<target> FILE).
set -eu
secs=${1:-60}
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${2:-${FUZZ_BUILD:-$src/build-fuzz}}
tarball=${VEILFS_TARBALL:-$src/tests/data/gocryptfs-2.3-vectors.tar.gz}

# Whether $build was configured with -Dfuzz=true.
is_fuzz_build() {
	/usr/bin/python3 -c 'import json, sys
opts = json.load(open(sys.argv[1]))
sys.exit(0 if any(o["name"] == "fuzz" and o["value"] is True for o in opts) else 1)' \
		"$build/meson-info/intro-buildoptions.json" 2>/dev/null
}

if [ -f "$build/build.ninja" ] && ! is_fuzz_build; then
	# Our own default folder is set up anew (its compiler may not be
	# clang); a folder the caller named is theirs, and left as it is.
	if [ -n "${2:-}${FUZZ_BUILD:-}" ]; then
		echo "fuzz: $build is a build without -Dfuzz=true; name another folder or remove it" >&2
		exit 2
	fi
	rm -rf "$build"
fi
if [ ! -f "$build/build.ninja" ]; then
	CC=clang meson setup "$build" "$src" -Dfuzz=true -Dtests=false \
		-Dman=disabled -Dwerror=false -Db_lundef=false \
		-Db_sanitize=address,undefined \
		-Dc_args=-fsanitize=fuzzer-no-link
fi
ninja -C "$build" fuzz

# fuzz-out is made anew each run; the corpora each target grows are kept
# beside it, so that a later run goes on from where this one stopped.
out=$build/fuzz-out
corpus=$build/fuzz-corpus
rm -rf "$out"
mkdir -p "$out/seeds"
vec=${VEILFS_VECTORS:-}
if [ -z "$vec" ] || [ ! -d "$vec/gcm" ]; then
	vec=$out/vectors
	"$src/tests/tools/extract_vectors.sh" "$tarball" "$vec"
fi
/usr/bin/python3 "$src/tests/fuzz/make_seeds.py" "$vec" "$out/seeds"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
if [ -f "$src/tests/lsan_suppress.txt" ]; then
	export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$src/tests/lsan_suppress.txt}"
fi

failed=""
npass=0
nfail=0
for exe in "$build"/tests/fuzz/fuzz_*; do
	if [ ! -f "$exe" ] || [ ! -x "$exe" ]; then
		continue
	fi
	t=$(basename "$exe")
	mkdir -p "$corpus/$t" "$out/seeds/$t"
	echo "== $t: ${secs}s, $(find "$out/seeds/$t" -type f | wc -l) seeds"
	if ! "$exe" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$out/$t-" \
		"$corpus/$t" "$out/seeds/$t" >"$out/$t.log" 2>&1; then
		failed="$failed $t"
		nfail=$((nfail + 1))
		tail -n 60 "$out/$t.log"
	else
		npass=$((npass + 1))
		grep -E '^stat::number_of_executed_units|^Done|cov:' "$out/$t.log" | tail -n 2
	fi
done
if [ -n "$failed" ]; then
	echo "fuzz: FINDINGS in:$failed (inputs in $out)"
fi
# last line, parsed by .ci/run
echo "fuzz: $npass passed, $nfail failed (${secs}s per target)"
[ "$nfail" -eq 0 ]
