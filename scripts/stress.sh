#!/usr/bin/env bash
# The long-running reliability checks of issue 7, beyond scripts/test.sh:
#
#   1. every native fuzz target in the module (16B decap, management
#      framing, every MAD codec, the FM against a hostile node, a node
#      against a hostile EM, the config loaders, the control-socket
#      protocol, the CNI config, receive coalescing, the TSO/USO
#      segmenter), each for
#      --fuzztime (default 5m),
#      one worker each; a crasher fails the run and Go keeps it in the
#      package's testdata/fuzz, where it becomes a regression test;
#   2. as root, the fault tests at full size: the garbage flood (200k
#      datagrams while ping and iperf3 cross the switch), TCP over a tc netem
#      underlay (loss, reordering, duplication, delay; 32 MiB checksummed;
#      skipped on kernels without sch_netem) and over a userspace relay that
#      makes the same faults,
#      SIGKILL restarts and a node changing its UDP address.
#
# It prints one line per fuzz target (execs, result) and the FIGURE lines the
# fault tests log, and writes them to --out (default bench/STRESS.md).
# scripts/test.sh runs `scripts/stress.sh --short` (3 s per target, the fault
# tests at the suite's own smaller sizes are already part of `go test`).
#
#   scripts/stress.sh [--fuzztime D] [--short] [--fuzz-only|--faults-only]
#                     [--match REGEXP] [--out FILE]
#
#   --fuzztime D   fuzz time per target, a Go duration (default 5m)
#   --short        3 s per target and no separate fault run (CI)
#   --fuzz-only    only the fuzz targets; --faults-only: only the fault tests
#   --match RE     only fuzz targets whose name matches RE
#   --out FILE     where to write the summary (default bench/STRESS.md;
#                  --short writes none)
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=5m fuzz=1 faults=1 match=. out=bench/STRESS.md short=0
# value OPTION ARG: ARG must be there.
value() { [[ $# -ge 2 && -n $2 ]] || { echo "stress: $1 needs a value (--help)" >&2; exit 2; }; }
while (($#)); do
	case $1 in
	--fuzztime) value "$@"; fuzztime=$2; shift 2 ;;
	--short) fuzztime=3s faults=0 short=1 out=""; shift ;;
	--fuzz-only) faults=0; shift ;;
	--faults-only) fuzz=0; shift ;;
	--match) value "$@"; match=$2; shift 2 ;;
	--out) value "$@"; out=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -euo/{/^set -euo/!p}' "scripts/${0##*/}"; exit 0 ;;
	*) echo "stress: unknown argument $1" >&2; exit 2 ;;
	esac
done
[[ $fuzztime =~ ^[0-9]+(\.[0-9]+)?(s|m|h)$ ]] || { echo "stress: --fuzztime takes a duration like 30s or 5m" >&2; exit 2; }
command -v go >/dev/null 2>&1 || { echo "stress: go is missing (scripts/deps.sh installs the rest; Go itself must be on PATH)" >&2; exit 1; }

summary=()
failed=0
note() { summary+=("$1"); echo "$1"; }

if ((fuzz)); then
	echo "== fuzz: every target for $fuzztime"
	mapfile -t pkgs < <(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./...)
	log=$(mktemp)
	trap 'rm -f "$log"' EXIT
	note "| package | target | fuzz time | execs | result |"
	note "|---|---|---|---|---|"
	for p in "${pkgs[@]}"; do
		mapfile -t targets < <(go test -list '^Fuzz' "$p" | grep '^Fuzz' | grep -E -- "$match" || true)
		for t in "${targets[@]}"; do
			# One worker: the machine has two cores and the figures stay comparable.
			if go test "$p" -run '^$' -fuzz "^$t\$" -fuzztime "$fuzztime" -parallel 1 >"$log" 2>&1; then
				res=ok
			elif grep -q 'Failing input written to' "$log"; then
				res="FAIL (crasher in ${p#github.com/opavnic/opavnic/}/testdata/fuzz/$t)"
				failed=1
				tail -30 "$log" >&2
			elif grep -q '^    context deadline exceeded$' "$log"; then
				# Go 1.26's fuzzing coordinator can report its own -fuzztime
				# deadline as a failure, with no failing input
				# (go.dev/issue/75804, fixed in Go 1.27).
				res="ok (no failing input; the coordinator's deadline race, go.dev/issue/75804)"
			else
				res="FAIL (see the log above)"
				failed=1
				tail -30 "$log" >&2
			fi
			# A target whose seed corpus takes the whole fuzz time to replay
			# (a slow one on a loaded machine) ends with no execs line: 0, not
			# an abort of the whole run under pipefail.
			execs=$(grep -Eo 'execs: [0-9]+' "$log" | tail -1 | cut -d' ' -f2 || true)
			note "| ${p#github.com/opavnic/opavnic/} | $t | $fuzztime | ${execs:-0} | $res |"
		done
	done
fi

if ((faults)); then
	echo "== fault tests at full size"
	if [[ $(id -u) -ne 0 ]]; then
		echo "stress: the fault tests need root (network namespaces); run as root or pass --fuzz-only" >&2
		exit 1
	fi
	source scripts/deps.sh
	flog=$(mktemp)
	if OPAVNIC_FLOOD_PACKETS=200000 OPAVNIC_NETEM_BYTES=$((32 << 20)) CI=true \
		go test -count=1 -timeout 40m -v -run 'TestE2EGarbageFlood|TestE2ENetem|TestE2EUnderlayRelayFaults|TestE2EKillRestartStatic|TestE2ENodeAddressChange' ./cmd/vnicd >"$flog" 2>&1; then
		note "fault tests: ok"
	else
		note "fault tests: FAIL"
		failed=1
		tail -60 "$flog" >&2
	fi
	while IFS= read -r l; do note "${l#"${l%%FIGURE*}"}"; done < <(grep 'FIGURE' "$flog" || true)
	rm -f "$flog"
fi

if [[ -n $out ]] && ((!short)); then
	mkdir -p "$(dirname "$out")"
	{
		echo "# scripts/stress.sh, $(date -u +%Y-%m-%dT%H:%MZ)"
		echo
		echo "Machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(uname -r), $(go version | cut -d' ' -f3)"
		echo
		printf '%s\n' "${summary[@]}"
	} >"$out"
	echo "== written to $out"
fi
exit $failed
