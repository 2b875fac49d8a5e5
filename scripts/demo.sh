#!/usr/bin/env bash
# The opavnic demo: two emulated hosts, each a network namespace running
# vnicd, joined by a veth underlay. As in the OPA VNIC documentation's
# picture, there are two HFIs and two virtual Ethernet switches, and each HFI
# has one VNIC on each switch. Host b's LID, 0xC000, is extended.
#
#   red  switch (vesw 1): host a vnic0 192.168.101.1  <->  host b vnic0 192.168.101.2
#   blue switch (vesw 2): host a vnic1 192.168.102.1  <->  host b vnic1 192.168.102.2
#
# The red VNICs live in the host namespaces; the blue ones are placed in a
# namespace of their own on each host (<run>-a-blue, <run>-b-blue), as a
# container's would be.
#
# It shows the VNICs in `ip link`, pings across each switch (IPv4 and IPv6),
# shows that the switches are isolated, runs iperf3 TCP across the red switch
# and over the bare underlay for comparison, and prints the daemons' counters.
# With --managed, a fabric manager (opafm, configs/demo/fabric.yaml) runs in a
# third namespace and the hosts know only its address (configs/demo/managed-
# host-*.yaml): the FM gives host a LID 0x10 and host b 0xC000 from its pool,
# and its Ethernet Manager creates the VNICs on both switches.
#
# Everything it makes carries a name unique to the run and is removed on exit,
# also on Ctrl-C or failure. Run as root:  scripts/demo.sh [--managed] [--seconds N]
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=5
managed=0
given="$*"
while (($#)); do
	case $1 in
	--seconds)
		# iperf3 -t: a whole number of seconds (iperf3 reads "abc" as 0).
		[[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "demo: --seconds takes a whole number of seconds, such as --seconds 10" >&2; exit 2; }
		seconds=$2; shift 2 ;;
	--managed) managed=1; shift ;;
	-h | --help) sed -n '2,23p' "scripts/${0##*/}"; exit 0 ;;
	*) echo "demo: unknown argument $1" >&2; exit 2 ;;
	esac
done
if [[ $(id -u) -ne 0 ]]; then
	echo "demo: must run as root (it makes network namespaces and TAP devices): sudo $0${given:+ $given}" >&2
	exit 1
fi
source scripts/deps.sh

run="ovd$(printf '%x' $$)"
export OPAVNIC_RUN=$run
A=$run-a B=$run-b F=$run-fm L=$run-lan
# The names come from the PID, so a run killed with SIGKILL can leave a
# namespace that a later run's PID names again. Stop before making anything,
# and leave it alone: the cleanup below removes every namespace of the run.
for ns in "$A" "$B" "$A-blue" "$B-blue" "$F" "$L"; do
	if [[ -e /var/run/netns/$ns ]]; then
		echo "demo: network namespace $ns already exists (left by a demo that was killed?);" \
			"remove it with 'ip netns del $ns' or run the demo again" >&2
		exit 1
	fi
done
work=$(mktemp -d "/tmp/opavnic-demo.XXXXXX")
bin=$work/bin
pids=()

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do
		for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
	done
	for ns in "$A" "$B" "$A-blue" "$B-blue" "$F" "$L"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
		ip netns del "$ns" 2>/dev/null || true
	done
	# The sockets, and the state files vnicd and opafm keep beside them: the
	# FM's MAC file (.macs.json), a host's runtime VNICs and claims.
	for n in "$A" "$B" "$F"; do
		rm -f "/run/opavnic/$n.sock" "/run/opavnic/$n.macs.json" "/run/opavnic/$n.runtime.json" "/run/opavnic/$n.claims.json"
	done
	if ((rc != 0)); then
		echo "demo: FAILED (exit $rc); daemon logs:" >&2
		tail -n 20 "$work"/*.log >&2 2>/dev/null || true
	fi
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
inns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

step "build"
mkdir -p "$bin"
go build -buildvcs=false -o "$bin/vnicd" ./cmd/vnicd
go build -buildvcs=false -o "$bin/vnicctl" ./cmd/vnicctl
go build -buildvcs=false -o "$bin/opafm" ./cmd/opafm
echo "built vnicd, vnicctl and opafm in $bin"

for ns in "$A" "$B" "$A-blue" "$B-blue"; do
	ip netns add "$ns"
	inns "$ns" ip link set lo up
done
if ((managed)); then
	step "two hosts ($A, $B) and a fabric manager ($F) on one underlay segment 10.200.0.0/24, MTU 9000"
	ip netns add "$F"
	ip netns add "$L"
	inns "$F" ip link set lo up
	inns "$L" ip link add "${run}br" mtu 9000 type bridge
	inns "$L" ip link set "${run}br" up
	i=1
	for ns in "$A" "$B" "$F"; do
		ip -n "$L" link add "${run}p$i" mtu 9000 type veth peer name "${run}u$i" mtu 9000 netns "$ns"
		ip -n "$L" link set "${run}p$i" master "${run}br" up
		inns "$ns" ip addr add "10.200.0.$i/24" dev "${run}u$i"
		inns "$ns" ip link set "${run}u$i" up
		i=$((i + 1))
	done
else
	step "two hosts ($A, $B) joined by a veth underlay 10.200.0.0/24, MTU 9000 (an OPA link carries 10 KB packets)"
	# Made in place, so that no end is ever left in the root namespace.
	ip -n "$A" link add "${run}ua" mtu 9000 type veth peer name "${run}ub" mtu 9000 netns "$B"
	inns "$A" ip addr add 10.200.0.1/24 dev "${run}ua"
	inns "$B" ip addr add 10.200.0.2/24 dev "${run}ub"
	inns "$A" ip link set "${run}ua" up
	inns "$B" ip link set "${run}ub" up
fi

cfg_a=configs/demo/host-a.yaml cfg_b=configs/demo/host-b.yaml
if ((managed)); then
	step "start the fabric manager (configs/demo/fabric.yaml)"
	inns "$F" "$bin/opafm" --config configs/demo/fabric.yaml >"$work/fm.log" 2>&1 &
	pids+=($!)
	cfg_a=configs/demo/managed-host-a.yaml cfg_b=configs/demo/managed-host-b.yaml
fi
step "start vnicd on both hosts ($cfg_a, $cfg_b)"
inns "$A" "$bin/vnicd" --config "$cfg_a" >"$work/host-a.log" 2>&1 &
pids+=($!)
inns "$B" "$bin/vnicd" --config "$cfg_b" >"$work/host-b.log" 2>&1 &
pids+=($!)
ctl_a=(--socket "/run/opavnic/$A.sock")
ctl_b=(--socket "/run/opavnic/$B.sock")
forwarding() { "$bin/vnicctl" "$@" --json vnics 2>/dev/null | grep -c '"oper_state": "FORWARDING"' || true; }
for i in $(seq 100); do
	if (($(forwarding "${ctl_a[@]}") == 2 && $(forwarding "${ctl_b[@]}") == 2)); then
		break
	fi
	for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null || { echo "demo: a daemon exited" >&2; exit 1; }; done
	((i == 100)) && { echo "demo: the VNICs were not forwarding within 20 s" >&2; exit 1; }
	sleep 0.2
done
if ((managed)); then
	echo "-- the fabric as the FM sees it"
	"$bin/vnicctl" --socket "/run/opavnic/$F.sock" fabric
fi
"$bin/vnicctl" "${ctl_a[@]}" hfi | sed -n 1,4p
"$bin/vnicctl" "${ctl_b[@]}" hfi | sed -n 1,4p

step "ip link: the VNICs are real netdevs"
for ns in "$A" "$A-blue" "$B" "$B-blue"; do
	echo "-- $ns"
	inns "$ns" ip -br link show type tun 2>/dev/null || inns "$ns" ip -br link
	inns "$ns" ip -br addr show | grep vnic || true
done
echo
"$bin/vnicctl" "${ctl_a[@]}" vnics
echo
"$bin/vnicctl" "${ctl_b[@]}" vnics

step "ping across the red switch (vesw 1), IPv4 and IPv6"
inns "$A" ping -c 3 -i 0.2 -W 2 192.168.101.2
inns "$A" ping -6 -c 3 -i 0.2 -W 2 fd00:101::2

step "ping across the blue switch (vesw 2), IPv4 and IPv6"
inns "$A-blue" ping -c 3 -i 0.2 -W 2 192.168.102.2
inns "$A-blue" ping -6 -c 3 -i 0.2 -W 2 fd00:102::2

if ((managed)); then
	step "vnicctl path from host b (extended LID 0xC000) to host a: special GIDs, hop limit 1"
	"$bin/vnicctl" "${ctl_b[@]}" path 0x10
fi

step "isolation: from the blue switch, host b's red address 192.168.101.2 is unreachable"
inns "$A-blue" ip addr add 192.168.101.9/24 dev vnic1
if inns "$A-blue" ping -c 2 -i 0.2 -W 1 -I vnic1 192.168.101.2; then
	echo "demo: ISOLATION BROKEN: a red address answered on the blue switch" >&2
	exit 1
fi
echo "ok: no answer, the switches are isolated"
inns "$A-blue" ip addr del 192.168.101.9/24 dev vnic1

step "iperf3 TCP across the red switch ($seconds s)"
inns "$B" iperf3 -s -1 -B 192.168.101.2 >/dev/null 2>&1 &
pids+=($!)
sleep 0.5
inns "$A" iperf3 -c 192.168.101.2 -t "$seconds" -f m | grep -E 'sender|receiver'

step "iperf3 TCP over the bare veth underlay, for comparison ($seconds s)"
inns "$B" iperf3 -s -1 -B 10.200.0.2 >/dev/null 2>&1 &
pids+=($!)
sleep 0.5
inns "$A" iperf3 -c 10.200.0.2 -t "$seconds" -f m | grep -E 'sender|receiver'

step "counters of host a (kernel ethtool names)"
"$bin/vnicctl" "${ctl_a[@]}" counters | grep -Ev '\s0\s+0$' || true
step "HFI counters of host b"
"$bin/vnicctl" "${ctl_b[@]}" hfi | tail -n +6
step "host a's fabric: each LID's endpoint, the traffic with each peer, its last packet"
"$bin/vnicctl" "${ctl_a[@]}" fabric

step "done: the demo cleans up everything it made"
