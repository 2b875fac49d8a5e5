# syntax=docker/dockerfile:1
# opavnic: static binaries of vnicd, opafm, vnicctl (and vnic-cni when the
# tree has it) in a small image. Build:  docker build -t opavnic:dev .
# Run vnicd:  docker run --network host --cap-add NET_ADMIN --device /dev/net/tun \
#             -v /etc/opavnic:/etc/opavnic:ro -v /run/opavnic:/run/opavnic opavnic:dev \
#             vnicd --config /etc/opavnic/vnicd.yaml
# (VNICs placed in other network namespaces also need CAP_SYS_ADMIN and the
# host's /var/run/netns; configs/k8s/vnicd-daemonset.yaml runs it that way.)

ARG GO_VERSION=1.26
FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The same flags as scripts/test.sh's static build check.
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false
RUN mkdir -p /out && for c in vnicd opafm vnicctl vnic-cni; do \
		if [ -d "./cmd/$c" ]; then \
			go build -trimpath -ldflags '-s -w' -o "/out/$c" "./cmd/$c" || exit 1; \
		fi; \
	done && ls -l /out

# Alpine rather than distroless: the Kubernetes CNI installer init container
# needs sh, cp, awk and sed; the binaries themselves need nothing from the image.
FROM alpine:3.20
RUN apk add --no-cache ca-certificates iproute2 && mkdir -p /etc/opavnic /run/opavnic /opt/opavnic/cni
COPY --from=build /out/ /usr/local/bin/
COPY configs/k8s/cni/opavnic.conflist configs/k8s/cni/ranges /opt/opavnic/cni/
COPY scripts/opavnic.lua /opt/opavnic/opavnic.lua
EXPOSE 4793/udp 9479/tcp
ENTRYPOINT []
CMD ["vnicd", "--help"]
