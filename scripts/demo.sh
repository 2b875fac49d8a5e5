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
# Everything it makes carries a name unique to the run and is removed on exit,
# also on Ctrl-C or failure. Run as root:  scripts/demo.sh [--seconds N]
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=5
while (($#)); do
	case $1 in
	--seconds) seconds=$2; shift 2 ;;
	-h | --help) sed -n '2,18p' "$0"; exit 0 ;;
	*) echo "demo: unknown argument $1" >&2; exit 2 ;;
	esac
done
if [[ $(id -u) -ne 0 ]]; then
	echo "demo: must run as root (it makes network namespaces and TAP devices)" >&2
	exit 1
fi
source scripts/deps.sh

run="ovd$(printf '%x' $$)"
export OPAVNIC_RUN=$run
work=$(mktemp -d "/tmp/opavnic-demo.XXXXXX")
bin=$work/bin
A=$run-a B=$run-b
pids=()

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do
		for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
	done
	for ns in "$A" "$B" "$A-blue" "$B-blue"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
		ip netns del "$ns" 2>/dev/null || true
	done
	rm -f "/run/opavnic/$A.sock" "/run/opavnic/$B.sock"
	if ((rc != 0)); then
		echo "demo: FAILED (exit $rc); daemon logs:" >&2
		tail -n 20 "$work"/*.log 2>/dev/null >&2 || true
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
go build -o "$bin/vnicd" ./cmd/vnicd
go build -o "$bin/vnicctl" ./cmd/vnicctl
echo "built vnicd and vnicctl in $bin"

step "two hosts ($A, $B) joined by a veth underlay 10.200.0.0/24, MTU 9000 (an OPA link carries 10 KB packets)"
for ns in "$A" "$B" "$A-blue" "$B-blue"; do
	ip netns add "$ns"
	inns "$ns" ip link set lo up
done
ip link add "${run}ua" mtu 9000 type veth peer name "${run}ub" mtu 9000
ip link set "${run}ua" netns "$A"
ip link set "${run}ub" netns "$B"
inns "$A" ip addr add 10.200.0.1/24 dev "${run}ua"
inns "$B" ip addr add 10.200.0.2/24 dev "${run}ub"
inns "$A" ip link set "${run}ua" up
inns "$B" ip link set "${run}ub" up

step "start vnicd on both hosts (configs/demo/host-a.yaml, host-b.yaml)"
inns "$A" "$bin/vnicd" --config configs/demo/host-a.yaml >"$work/host-a.log" 2>&1 &
pids+=($!)
inns "$B" "$bin/vnicd" --config configs/demo/host-b.yaml >"$work/host-b.log" 2>&1 &
pids+=($!)
ctl_a=(--socket "/run/opavnic/$A.sock")
ctl_b=(--socket "/run/opavnic/$B.sock")
for i in $(seq 50); do
	if "$bin/vnicctl" "${ctl_a[@]}" vnics >/dev/null 2>&1 && "$bin/vnicctl" "${ctl_b[@]}" vnics >/dev/null 2>&1; then
		break
	fi
	for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null || { echo "demo: a vnicd exited" >&2; exit 1; }; done
	((i == 50)) && { echo "demo: vnicd did not come up within 10 s" >&2; exit 1; }
	sleep 0.2
done
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

step "done: the demo cleans up everything it made"
