#!/usr/bin/env bash
# The crypto unit tests on CPUs older than the build machine's, emulated by
# qemu-user: every backend must see what the CPU lacks and stand aside
# (auto choice, "n/a" in -speed), and code built for AVX-512 or VAES must
# never run on such a CPU, not even a function's first instructions.
#   core2duo: no AES-NI, no AVX;  Haswell: AVX2 and AES-NI, no AVX-512
#   Icelake-Server: AVX-512 and VAES (only when qemu can emulate it)
# Usage: old_cpus.sh BUILD_DIR. Ends with "old_cpus: N passed, N failed".
set -u
build=${1:?usage: old_cpus.sh BUILD_DIR}
tests="test_aead test_content test_eme test_names test_kdf test_speed
test_gcm_vaes test_gcm_vaes_avx2 test_xchacha_avx512 test_masterkey"
pass=0 fail=0
if ! command -v qemu-x86_64 >/dev/null; then
	echo "old_cpus: qemu-x86_64 missing (package qemu-user)"
	echo "old_cpus: 0 passed, 1 failed"
	exit 1
fi
export VEILFS_UNDER_QEMU=1
for cpu in core2duo Haswell; do
	for t in $tests; do
		bin=$build/tests/unit/$t
		log=$(mktemp)
		if [ ! -x "$bin" ]; then
			echo "not ok - $cpu $t: $bin missing"
			fail=$((fail + 1))
		elif qemu-x86_64 -cpu "$cpu" "$bin" >"$log" 2>&1 &&
			! grep -q '^not ok' "$log" && grep -q '^ok' "$log"; then
			echo "ok - $cpu $t ($(grep -c '# SKIP' "$log") cases skipped)"
			pass=$((pass + 1))
		else
			echo "not ok - $cpu $t"
			tail -20 "$log"
			fail=$((fail + 1))
		fi
		rm -f "$log"
	done
done
echo "old_cpus: $pass passed, $fail failed"
[ "$fail" = 0 ]
