#!/usr/bin/env bash
# Installs what opavnic's scripts need on a Debian/Ubuntu machine, only what is
# missing: Go modules, and (as root) iproute2, iperf3, ping, tcpdump, ethtool, jq, curl,
# tshark (the Lua dissector's test), gcc and libc6-dev (cgo, which `go test -race` needs).
# promtool is optional (Debian's prometheus package, which also installs a server, so it is
# not installed here): the metrics test lints with it when present.
# Sourced by demo.sh and test.sh; safe to run on its own.
set -euo pipefail

need_pkgs=()
command -v ip >/dev/null 2>&1 || need_pkgs+=(iproute2)
command -v iperf3 >/dev/null 2>&1 || need_pkgs+=(iperf3)
command -v ping >/dev/null 2>&1 || need_pkgs+=(iputils-ping)
command -v tcpdump >/dev/null 2>&1 || need_pkgs+=(tcpdump)
command -v ethtool >/dev/null 2>&1 || need_pkgs+=(ethtool)
command -v jq >/dev/null 2>&1 || need_pkgs+=(jq)
command -v curl >/dev/null 2>&1 || need_pkgs+=(curl)
command -v tshark >/dev/null 2>&1 || need_pkgs+=(tshark)
command -v gcc >/dev/null 2>&1 || need_pkgs+=(gcc libc6-dev)

if ((${#need_pkgs[@]})); then
	if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
		echo "deps: installing ${need_pkgs[*]}" >&2
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq >/dev/null
		apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
	else
		echo "deps: missing ${need_pkgs[*]}; install them (as root: apt-get install ${need_pkgs[*]})" >&2
	fi
fi

if ! command -v go >/dev/null 2>&1; then
	if [[ -x /usr/local/go/bin/go ]]; then
		export PATH=$PATH:/usr/local/go/bin
	else
		echo "deps: Go is missing; install Go 1.26 or newer (https://go.dev/dl/)" >&2
		exit 1
	fi
fi
go mod download
