#!/usr/bin/env bash
# The side-by-side benchmark of issue 5: the bare veth underlay, kernel VXLAN
# over it (the reference) and vnicd over it, measured in one run, interleaved
# (each round measures every path, in a rotating order), medians of the rounds.
#
# Two hosts are two network namespaces joined by a veth; all four paths
# exist at once between them:
#   veth     10.201.0.1 <-> 10.201.0.2   the underlay itself
#   vxlan    10.202.0.1 <-> 10.202.0.2   kernel VXLAN (VNI 42, UDP 4789), MTU underlay-50
#   vnicd    10.203.0.1 <-> 10.203.0.2   one VNIC per host, eth_mtu as large as fits,
#                                        default config (but --queues)
#   vnicd-bp 10.204.0.1 <-> 10.204.0.2   the same on a second pair of daemons
#                                        with node.busy_poll: 1ms
# Figures per path: iperf3 TCP 1 stream and 4 streams, 64-byte UDP packets
# per second delivered (iperf3 -u -l 64 -b 0, no rate limit; the receiver's
# count), ping RTT average and p99 two ways, and, for vnicd, the CPU time
# both daemons used per gigabit carried (utime+stime from /proc/PID/stat
# over the TCP tests), and for every path the CPU time the whole machine used
# per gigabit over the same tests (everything on the path: both iperf3 ends,
# the kernel's work, the daemons) and the share of the CPUs left idle then
# (/proc/stat; steal counts as neither). Underlay MTU 1500 and 9000.
#
# The two pings: back-to-back (ping -A, 1000 pings: each sent as soon as the
# last reply is in, while ping's smoothed RTT is under 0.5 ms; above that
# ping -A waits 1 ms or more between pings; the reference figures of
# docs/performance.md and of issue 5 are of this kind), and
# 10 ms apart (200 pings), where every CPU on the path has gone idle between
# pings and each ping pays for waking them: on a VM that alone is tens of
# microseconds per wake-up, and a ping through vnicd wakes four threads where
# VXLAN's wakes one. The p99 is the nearest rank over the pings sent (of 200,
# the third slowest), an unanswered ping counting as 1 s; the average is over
# the answered ones. Each figure is the median of the rounds' figures, and
# each ratio that of two medians. Under each table the run notes any ping
# left unanswered and any iperf3 test that failed three times (recorded as 0).
#
# eth_mtu that fits: a full frame is eth_mtu+18 (one VLAN tag), the 16B packet
# is 20 + frame + pad + 5 rounded up to 8 bytes, plus 28 bytes of UDP/IPv4.
# At 1500: 1472 bytes of UDP payload = 184 QWs, frame <= 1447, eth_mtu <= 1429
# (1428 used). At 9000: 8972 -> 8968 (1121 QWs), frame <= 8943, eth_mtu <= 8925
# (8924 used). VXLAN adds 50 bytes: MTU 1450 and 8950.
#
# Prints the table (each figure with its ratio to VXLAN) and writes it, with
# the machine's load and what its kernel charges for a system call and a
# thread switch (scripts/vmcost, run first), to a markdown file. Everything
# it makes carries a name unique to the run and is removed on exit, Ctrl-C or
# failure. Run as root:
#
#   scripts/bench.sh [--runs N] [--seconds N] [--quick] [--mtu 1500|9000|both]
#                    [--queues auto|N] [--out FILE] [--cpuprofile DIR]
#
#   --runs N        rounds; medians are taken over them (default 3)
#   --seconds N     duration of each iperf3 test (default 5)
#   --quick         1 round of 2-second tests, 200 + 50 pings: a smoke test for CI
#   --mtu M         underlay MTU variants to run (default both)
#   --queues N      node.queues of both vnicd pairs, auto or 1..16 (default
#                   auto, the default config: one per CPU up to 4, the
#                   underlay veth having GRO off): poll loops, UDP sockets
#                   and TAP queues a host
#   --out FILE      the markdown results (default bench/RESULTS.md)
#   --cpuprofile D  run the vnicds with --cpuprofile, profiles kept in D
#                   (vnicd-mtuM-hostH-K.pprof: host 1 or 2, K 0 default, 1 busy_poll)
set -euo pipefail
cd "$(dirname "$0")/.."

runs=3 seconds=5 pings=200 bpings=1000 mtus="1500 9000" out=bench/RESULTS.md profdir="" queues=auto queues_used=""
while (($#)); do
	case $1 in
	--runs) runs=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--quick) runs=1 seconds=2 pings=50 bpings=200; shift ;;
	--mtu) mtus=${2/both/1500 9000}; shift 2 ;;
	--queues) queues=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--cpuprofile) profdir=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -euo/{/^set -euo/!p}' "scripts/${0##*/}"; exit 0 ;;
	*) echo "bench: unknown argument $1" >&2; exit 2 ;;
	esac
done
[[ $runs =~ ^[1-9][0-9]*$ && $seconds =~ ^[1-9][0-9]*$ ]] || { echo "bench: --runs and --seconds take positive integers" >&2; exit 2; }
[[ $queues =~ ^(auto|[1-9]|1[0-6])$ ]] || { echo "bench: --queues takes auto or 1 to 16" >&2; exit 2; }
for m in $mtus; do [[ $m == 1500 || $m == 9000 ]] || { echo "bench: --mtu takes 1500, 9000 or both" >&2; exit 2; }; done
if [[ $(id -u) -ne 0 ]]; then
	echo "bench: must run as root (it makes network namespaces, TAP and VXLAN devices)" >&2
	exit 1
fi
source scripts/deps.sh
for tool in ip iperf3 ping jq; do
	command -v "$tool" >/dev/null 2>&1 || { echo "bench: $tool is missing (scripts/deps.sh could not install it)" >&2; exit 1; }
done

run="ovb$(printf '%x' $$)"
work=$(mktemp -d "/tmp/opavnic-bench.XXXXXX")
A=$run-a B=$run-b
pids=() vnicd_pids=() bp_pids=()
tck=$(getconf CLK_TCK)

stop_pids() {
	local pid
	for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "$@"; do
		for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
}
teardown() {
	stop_pids "${pids[@]}"
	pids=() vnicd_pids=() bp_pids=()
	for ns in "$A" "$B"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
		ip netns del "$ns" 2>/dev/null || true
	done
}
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	teardown
	if ((rc != 0)); then
		echo "bench: FAILED (exit $rc); daemon logs:" >&2
		tail -n 20 "$work"/*.log >&2 2>/dev/null || true
	fi
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

inns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }
say() { printf '%s\n' "$*" >&2; }
# note TEXT: a measurement that did not go as planned, printed under its table.
note() { say "bench: $*"; printf '%s\n' "$*" >>"$work/notes"; }

if ! modprobe vxlan 2>/dev/null && ! grep -qw vxlan /proc/modules 2>/dev/null; then
	probe=$run-vxprobe
	if ! ip link add "$probe" type vxlan id 1 dstport 4789 dev lo 2>/dev/null; then
		say "bench: kernel VXLAN is not available (no vxlan module); the reference cannot be measured"
		exit 1
	fi
	ip link del "$probe"
fi

# The load average before anything of the run, the build included, so that
# it shows the machine's other work.
load0=$(cut -d' ' -f1-3 /proc/loadavg)
say "bench: building vnicd"
go build -buildvcs=false -o "$work/vnicd" ./cmd/vnicd
# What this machine's kernel charges for a system call and a thread switch
# (scripts/vmcost), measured before anything of the run starts: vnicd pays
# both many times per packet, kernel VXLAN hardly at all, so they explain
# much of how vnicd's figures differ from machine to machine.
go build -buildvcs=false -o "$work/vmcost" ./scripts/vmcost
say "bench: measuring system call and thread switch costs"
costs=$("$work/vmcost" 2>&1) || costs="not measured (vmcost failed: ${costs//$'\n'/ })"

# setup MTU: the two hosts, the underlay, VXLAN and the two vnicds.
setup() {
	local mtu=$1 ethmtu vxmtu
	case $mtu in 1500) ethmtu=1428 vxmtu=1450 ;; 9000) ethmtu=8924 vxmtu=8950 ;; esac
	ip netns add "$A"
	ip netns add "$B"
	inns "$A" ip link set lo up
	inns "$B" ip link set lo up
	ip -n "$A" link add "${run}ua" mtu "$mtu" type veth peer name "${run}ub" mtu "$mtu" netns "$B"
	local i ns dev peer p
	for i in 1 2; do
		if ((i == 1)); then ns=$A dev=${run}ua peer=2; else ns=$B dev=${run}ub peer=1; fi
		inns "$ns" ip addr add "10.201.0.$i/24" dev "$dev"
		inns "$ns" ip link set "$dev" up
		inns "$ns" ip link add vx0 mtu "$vxmtu" type vxlan id 42 dstport 4789 \
			local "10.201.0.$i" remote "10.201.0.$peer" dev "$dev"
		inns "$ns" ip addr add "10.202.0.$i/24" dev vx0
		inns "$ns" ip link set vx0 up
		# Pair 1 (vnicd) in the default config, pair 2 (vnicd-bp) with
		# busy polling: its own port, LIDs, TAP and subnet.
		local k bp
		for k in 0 1; do
			bp=""
			((k == 1)) && bp="busy_poll: 1ms, "
			cat >"$work/host$i-$k.yaml" <<-EOF
				node: {name: bench$i-$k, lid: $((0x10 + 0x10 * k + i)), listen: "10.201.0.$i:$((4793 + k))", ${bp}queues: $queues, underlay_interface: $dev}
				peers:
				  - {lid: $((0x10 + 0x10 * k + peer)), address: "10.201.0.$peer:$((4793 + k))", name: bench$peer-$k}
				multicast:
				  - {lid: 0xF00001, members: [$((0x11 + 0x10 * k)), $((0x12 + 0x10 * k))]}
				control: {socket: $work/host$i-$k.sock}
				vnics:
				  - vport: 0
				    vesw: {id: 1, pkey: 0x8001, eth_mtu: $ethmtu, mcast_dlid: 0xF00001}
				    port: {ifname: vnic$k, addresses: ["10.20$((3 + k)).0.$i/24"]}
			EOF
			local prof=()
			[[ -n $profdir ]] && prof=(--cpuprofile "$profdir/vnicd-mtu$mtu-host$i-$k.pprof")
			ip netns exec "$ns" "$work/vnicd" --config "$work/host$i-$k.yaml" --log-level warn "${prof[@]}" >"$work/host$i-$k.log" 2>&1 &
			pids+=($!)
			if ((k == 0)); then vnicd_pids+=($!); else bp_pids+=($!); fi
		done
	done
	for i in $(seq 50); do
		if inns "$A" ping -c 1 -W 1 -q 10.203.0.2 >/dev/null 2>&1 &&
			inns "$A" ping -c 1 -W 1 -q 10.204.0.2 >/dev/null 2>&1 &&
			inns "$A" ping -c 1 -W 1 -q 10.202.0.2 >/dev/null 2>&1; then
			break
		fi
		for p in "${vnicd_pids[@]}" "${bp_pids[@]}"; do kill -0 "$p" 2>/dev/null || { say "bench: a vnicd exited"; exit 1; }; done
		((i == 50)) && { say "bench: paths did not come up within 10 s"; exit 1; }
		sleep 0.2
	done
	# The second pair is measured as "busy_poll 1ms": make sure it is. vnicd
	# runs without it, and says so, when GOMAXPROCS is too low (a GOMAXPROCS
	# in the environment, or a cgroup CPU limit of one CPU).
	if grep -qs 'busy_poll is not in effect' "$work"/host[12]-1.log; then
		say "bench: node.busy_poll is not in effect on the second vnicd pair, whose column would be mislabelled:"
		grep -hs 'busy_poll is not in effect' "$work"/host[12]-1.log >&2
		exit 1
	fi
	# The queues in effect ("auto" picks them): the TAP's kernel queues, one
	# per fd attached, so one per poll loop.
	local q
	q=$(inns "$A" ls /sys/class/net/vnic0/queues | grep -c '^tx-') || q="?"
	[[ -z $queues_used || $queues_used == "$q" ]] || q="$queues_used, then $q"
	queues_used=$q
	# iperf3 servers on host b, one per path so no test waits for another's
	# server to come back.
	for p in 1 2 3 4; do
		ip netns exec "$B" iperf3 -s -p $((5200 + p)) -B "10.20$p.0.2" >/dev/null 2>&1 &
		pids+=($!)
	done
	sleep 0.5
}

# machine_ticks: the machine's busy (user, nice, system, irq, softirq), idle
# (idle, iowait) and stolen ticks so far, from /proc/stat's cpu line.
machine_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8, $5 + $6, $9; exit }' /proc/stat; }

# cpu_ticks PID...: utime+stime of the daemons.
cpu_ticks() {
	local t=0 pid f
	for pid in "$@"; do
		read -ra f <"/proc/$pid/stat"
		# fields 14 and 15 (1-based) follow the "(comm)" field, which has no spaces here
		t=$((t + f[13] + f[14]))
	done
	echo "$t"
}

# iperf PATHNO ARGS...: runs a bounded iperf3 client from host a, prints its JSON.
iperf() {
	local p=$1; shift
	local try
	for try in 1 2 3; do
		if timeout $((seconds + 15)) ip netns exec "$A" iperf3 -c "10.20$p.0.2" -p $((5200 + p)) \
			-t "$seconds" -J "$@" >"$work/iperf.json" 2>/dev/null; then
			cat "$work/iperf.json"
			return
		fi
		sleep 0.5 # the server may still be resetting from the last test
	done
	echo '{}'
}

# failed JSON FIGURE: notes an iperf3 test that failed three times; its figure
# is recorded as 0, which the reader should know.
failed() {
	if [[ $1 == '{}' ]]; then note "$name: $2, round $((r + 1)): iperf3 failed three times (in the median as 0)"; fi
}

# measure PATHNO NAME: one round of every figure on one path; appends
# "name figure value" lines to $work/samples.
measure() {
	local p=$1 name=$2 j c0 c1 m0 m1 v dp=()
	case $name in vnicd) dp=("${vnicd_pids[@]}") ;; vnicd-bp) dp=("${bp_pids[@]}") ;; esac
	c0=$(cpu_ticks "${dp[@]}")
	m0=$(machine_ticks)
	j=$(iperf "$p")
	failed "$j" "TCP, 1 stream"
	v=$(jq -r '.end.sum_received.bits_per_second // 0' <<<"$j")
	echo "$name tcp1 $v" >>"$work/samples"
	local bits=$(jq -r '.end.sum_received.bytes // 0' <<<"$j")
	j=$(iperf "$p" -P 4)
	failed "$j" "TCP, 4 streams"
	v=$(jq -r '.end.sum_received.bits_per_second // 0' <<<"$j")
	echo "$name tcp4 $v" >>"$work/samples"
	bits=$(jq -rn "($bits + $(jq -r '.end.sum_received.bytes // 0' <<<"$j")) * 8")
	c1=$(cpu_ticks "${dp[@]}")
	m1=$(machine_ticks)
	# Over both TCP tests: CPU seconds per gigabit carried, of both daemons
	# (vnicd paths only) and of the whole machine, and the share of CPU time
	# left idle.
	awk -v n="$name" -v daemons=${#dp[@]} -v d=$((c1 - c0)) -v a="$m0" -v b="$m1" -v bits="$bits" -v tck="$tck" 'BEGIN {
		split(a, x, " "); split(b, y, " "); busy = y[1] - x[1]; idle = y[2] - x[2]
		if (bits > 0 && daemons > 0) printf "%s cpu %.9f\n", n, d / tck / (bits / 1e9)
		if (bits > 0) printf "%s mcpu %.9f\n", n, busy / tck / (bits / 1e9)
		if (busy + idle > 0) printf "%s idle %.6f\n", n, idle / (busy + idle) }' >>"$work/samples"
	j=$(iperf "$p" -u -l 64 -b 0)
	failed "$j" "64 B UDP"
	# sum_received is the server's count of packets and losses.
	jq -r --arg n "$name" '(.end.sum_received // .end.sum) as $s | if $s.packets then
		"\($n) udp64 \((($s.packets - $s.lost_packets) / $s.seconds))" else "\($n) udp64 0" end' <<<"$j" >>"$work/samples"
	# ping's output goes to a file, not a pipe, so that no reader process
	# competes for the CPUs while it runs.
	local kind
	for kind in b2b i10; do
		if [[ $kind == b2b ]]; then
			inns "$A" ping -n -A -c "$bpings" -W 1 "10.20$p.0.2" >"$work/ping.out" 2>/dev/null || true
		else
			inns "$A" ping -n -c "$pings" -i 0.01 -W 1 "10.20$p.0.2" >"$work/ping.out" 2>/dev/null || true
		fi
		sed -n '/DUP!/!s/.*time=\([0-9.]*\) ms.*/\1/p' "$work/ping.out" | sort -n >"$work/rtt"
		# A ping without a reply is no sample, but it is not faster than
		# the others: the p99 is taken over the pings sent, each
		# unanswered one counting as the 1 s that ping waits for it.
		local sent got
		sent=$(sed -n 's/^\([0-9]*\) packets transmitted.*/\1/p' "$work/ping.out")
		got=$(wc -l <"$work/rtt")
		if ((${sent:-0} > got)); then
			note "$name: ping $kind, round $((r + 1)): $((sent - got)) of $sent pings unanswered (in the p99 as 1 s, not in the average)"
		fi
		if [[ -s $work/rtt ]]; then
			awk -v n="$name" -v k="$kind" -v sent="${sent:-0}" '{ s += $1; a[NR] = $1 } END {
				t = sent > NR ? sent : NR
				i = int(t * 0.99 + 0.999999); if (i > t) i = t
				p = i <= NR ? a[i] : 1000
				printf "%s ping_%s_avg %.6f\n%s ping_%s_p99 %.6f\n", n, k, s / NR * 1000, n, k, p * 1000 }' "$work/rtt" >>"$work/samples"
		fi
	done
}

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
med() { awk -v n="$1" -v f="$2" '$1 == n && $2 == f { print $3 }' "$work/samples" | median; }

# report MTU: the markdown table of one variant.
report() {
	local mtu=$1 f label unit scale name v x ref
	echo
	echo "### Underlay MTU $mtu ($2)"
	echo
	echo "| figure | bare veth | kernel VXLAN (reference) | vnicd | vnicd, busy_poll 1ms |"
	echo "|---|---|---|---|---|"
	for f in tcp1 tcp4 udp64 ping_b2b_avg ping_b2b_p99 ping_i10_avg ping_i10_p99 cpu mcpu idle; do
		case $f in
		tcp1) label="TCP, 1 stream" unit="Gbit/s" scale=1e-9 ;;
		tcp4) label="TCP, 4 streams" unit="Gbit/s" scale=1e-9 ;;
		udp64) label="64 B UDP delivered" unit="kpps" scale=1e-3 ;;
		ping_b2b_avg) label="ping RTT avg, back-to-back" unit="us" scale=1 ;;
		ping_b2b_p99) label="ping RTT p99, back-to-back" unit="us" scale=1 ;;
		ping_i10_avg) label="ping RTT avg, 10 ms apart" unit="us" scale=1 ;;
		ping_i10_p99) label="ping RTT p99, 10 ms apart" unit="us" scale=1 ;;
		cpu) label="vnicd CPU per Gbit (both daemons)" unit="ms" scale=1e3 ;;
		mcpu) label="machine CPU per Gbit (all of it, TCP tests)" unit="ms" scale=1e3 ;;
		idle) label="CPUs idle during the TCP tests" unit="%" scale=100 ;;
		esac
		ref=$(med vxlan "$f")
		printf '| %s |' "$label"
		for name in veth vxlan vnicd vnicd-bp; do
			v=$(med "$name" "$f")
			if [[ $v == nan ]]; then printf ' - |'; continue; fi
			x=$(awk -v v="$v" -v s="$scale" 'BEGIN { x = v * s; printf (x >= 100 ? "%.0f" : x >= 10 ? "%.1f" : "%.2f"), x }')
			if [[ $name == vxlan || $ref == nan || $f == idle ]] || awk -v r="$ref" 'BEGIN { exit !(r == 0) }'; then
				printf ' %s %s |' "$x" "$unit"
			else
				printf ' %s %s (%sx) |' "$x" "$unit" "$(awk -v v="$v" -v r="$ref" 'BEGIN { printf "%.2f", v / r }')"
			fi
		done
		echo
	done
	if [[ -s $work/notes ]]; then
		echo
		echo "Notes:"
		echo
		sed 's/^/- /' "$work/notes"
	fi
}

# stolen_share: the share of the machine's CPU time, between two readings of
# machine_ticks, that the hypervisor gave to other guests (steal). On a
# shared VM it is a large part of the run-to-run spread, so the results say it.
stolen_share() { awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); t = y[1] + y[2] + y[3] - x[1] - x[2] - x[3]; printf "%.1f%%", (t > 0 ? (y[3] - x[3]) * 100 / t : 0) }'; }

started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
stat0=$(machine_ticks)
tables=""
for mtu in $mtus; do
	case $mtu in 1500) desc="vnicd eth_mtu 1428, VXLAN MTU 1450" ;; 9000) desc="vnicd eth_mtu 8924, VXLAN MTU 8950" ;; esac
	say "bench: underlay MTU $mtu: setting up ($desc)"
	: >"$work/samples"
	: >"$work/notes"
	setup "$mtu"
	cc=$(inns "$A" cat /proc/sys/net/ipv4/tcp_congestion_control)
	paths=(1:veth 2:vxlan 3:vnicd 4:vnicd-bp)
	for ((r = 0; r < runs; r++)); do
		for ((k = 0; k < 4; k++)); do
			pp=${paths[$(((r + k) % 4))]}
			say "bench: MTU $mtu round $((r + 1))/$runs: ${pp#*:} (load $(cut -d' ' -f1 /proc/loadavg))"
			measure "${pp%%:*}" "${pp#*:}"
		done
	done
	for pid in "${vnicd_pids[@]}" "${bp_pids[@]}"; do kill -0 "$pid" 2>/dev/null || { say "bench: a vnicd died during the run"; exit 1; }; done
	tables+=$(report "$mtu" "$desc")$'\n'
	teardown
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
stolen=$(stolen_share "$stat0" "$(machine_ticks)")
# Which of vnicd's SIMD paths this CPU runs (docs/performance.md): the ICRC
# fold needs VPCLMULQDQ and AVX2, the checksum word sums AVX2.
flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
has() { [[ " $flags " == *" $1 "* ]]; }
simd="ICRC: hash/crc32; checksums: scalar"
if has avx2; then
	simd="ICRC: hash/crc32; checksums: AVX2"
	if has vpclmulqdq; then simd="ICRC: VPCLMULQDQ fold; checksums: AVX2"; fi
fi

result=$(
	echo "# opavnic benchmark results"
	echo
	echo "Written by \`scripts/bench.sh\` (started $started; $runs round(s) of ${seconds}-second iperf3 tests"
	echo "and $bpings back-to-back + $pings spaced pings, paths interleaved, medians). $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//');"
	echo "kernel $(uname -r); vnicd's SIMD paths here: $simd. Load average before $load0, after $load1;"
	echo "CPU time stolen by the hypervisor during the run: $stolen. TCP congestion control: $cc. vnicd's node.queues: $queues ($queues_used in effect). Both hosts, both iperf3 ends,"
	echo "all four daemons and any other work on the machine share its CPUs, so every figure depends on how they are shared; ratios hold better than absolute"
	echo "figures. Ratios in parentheses are to kernel VXLAN (for ping and CPU, lower is better). This machine's kernel costs"
	echo "(\`scripts/vmcost\`, before the run): $costs."
	if [[ -n $profdir ]]; then
		echo
		echo "The vnicds ran with --cpuprofile (profiles in $profdir): profiling costs them CPU time, so their figures are a little low."
	fi
	echo "$tables"
)
printf '%s\n' "$result"
mkdir -p "$(dirname "$out")"
printf '%s\n' "$result" >"$out"
say "bench: written to $out"
