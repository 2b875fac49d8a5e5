#!/usr/bin/env bash
# All of opavnic's tests: vet (also for linux/arm64, 386 and arm) and format
# checks, the static-binary check, and
# every test (unit, fuzz seed corpora and, as root, the end-to-end tests in
# network namespaces, which build their own namespaces and always remove
# them) twice: once plain, where the zero-allocation tests count, and once
# under the race detector.
#
#   scripts/test.sh            # everything
#   scripts/test.sh -run E2E   # extra arguments go to `go test`
#
# It ends with `scripts/stress.sh --short`: every fuzz target for 3 s (the full
# 5-minute runs and the full-size fault tests are `scripts/stress.sh`).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh

# The race detector needs cgo, and Go turns cgo off when there is no C
# compiler; say so now rather than after the plain test pass.
if [[ $(go env CGO_ENABLED) != 1 ]]; then
	echo "test.sh: go test -race needs cgo, which is off here (no C compiler?):" \
		"install gcc and libc6-dev (as root, scripts/deps.sh does) or set CGO_ENABLED=1" >&2
	exit 1
fi

echo "== gofmt"
unformatted=$(gofmt -l . | grep -v '^vendor/' || true)
if [[ -n $unformatted ]]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi
echo "== go vet"
go vet ./...

echo "== static binaries (the Dockerfile's build: CGO_ENABLED=0 -trimpath -ldflags '-s -w')"
static_dir=$(mktemp -d)
trap 'rm -rf "$static_dir"' EXIT
for c in vnicd opafm vnicctl vnic-cni; do
	[[ -d cmd/$c ]] || continue
	CGO_ENABLED=0 go build -buildvcs=false -trimpath -ldflags '-s -w' -o "$static_dir/$c" "./cmd/$c"
	if command -v file >/dev/null 2>&1; then
		file -b "$static_dir/$c" | grep -q 'statically linked' || { echo "$c is not static: $(file -b "$static_dir/$c")" >&2; exit 1; }
	fi
	echo "$c: $(du -h "$static_dir/$c" | cut -f1)"
done
OPAVNIC_STATIC_DIR=$static_dir go test -count=1 -run TestStaticBinaries ./scripts

echo "== other Linux architectures build (arm64, and 32-bit 386 and arm for the syscall structs' field widths)"
for arch in arm64 386 arm; do
	GOOS=linux GOARCH=$arch go vet ./...
done

if [[ $(id -u) -ne 0 ]]; then
	echo "== note: not root, so the namespace end-to-end tests will skip" >&2
fi
echo "== go test"
go test -count=1 -timeout 30m "$@" ./...
echo "== go test -race"
go test -race -count=1 -timeout 30m "$@" ./...
if (($# == 0)); then # a narrowed run (extra go test arguments) skips it
	echo "== scripts/stress.sh --short (every fuzz target for 3 s)"
	bash scripts/stress.sh --short
fi
