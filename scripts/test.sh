#!/usr/bin/env bash
# All of opavnic's tests: vet and format checks, unit tests with the fuzz seed
# corpora under the race detector, and, as root, the end-to-end tests in network namespaces (which
# build their own namespaces and always remove them).
#
#   scripts/test.sh            # everything
#   scripts/test.sh -run E2E   # extra arguments go to `go test`
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh

echo "== gofmt"
unformatted=$(gofmt -l . | grep -v '^vendor/' || true)
if [[ -n $unformatted ]]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi
echo "== go vet"
go vet ./...

if [[ $(id -u) -ne 0 ]]; then
	echo "== note: not root, so the namespace end-to-end tests will skip" >&2
fi
echo "== go test -race"
go test -race -count=1 -timeout 30m "$@" ./...
