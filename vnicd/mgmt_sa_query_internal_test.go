package vnicd

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// TestPathQueryIsKernelSized: the node's PathRecord Get is laid out and
// sized as the kernel's SA client sends an OPA query. drivers/infiniband/
// core/sa_query.c: init_mad sets base_version OPA_MGMT_BASE_VERSION and
// class_version OPA_SA_CLASS_VERSION for IB_SA_QUERY_OPA; alloc_mad calls
// ib_create_send_mad(..., IB_MGMT_SA_HDR, IB_MGMT_SA_DATA, ...,
// OPA_MGMT_BASE_VERSION), and drivers/infiniband/core/mad.c
// ib_create_send_mad sends an OPA MAD whose data_len < mad_size - hdr_len
// only hdr_len + data_len long ("OPA MADs don't have to be the full 2048
// bytes"): 56 + 200 = 256 bytes. Offsets: include/rdma/ib_mad.h struct
// ib_sa_mad (comp_mask at 48, data at 56), sa_query.c opa_path_rec_table
// (opa.dlid word 10, opa.slid word 11, 32 bits each).
func TestPathQueryIsKernelSized(t *testing.T) {
	got, err := pathQuery(0x0000000100000007, 0x00C00001, 0x00C00002)
	if err != nil {
		t.Fatal(err)
	}
	w := make([]byte, 256)
	copy(w[0:], []byte{0x80, 0x03, 0x80, 0x01})                         // base 0x80, SubnAdm, class 0x80, Get
	copy(w[8:], []byte{0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x07}) // tid
	copy(w[16:], []byte{0x00, 0x35})                                    // attr_id PathRecord
	copy(w[48:], []byte{0, 0, 0, 0, 0, 0, 0, 0x30})                     // comp_mask: SLID (5), DLID (4)
	copy(w[56+40:], []byte{0x00, 0xC0, 0x00, 0x02})                     // opa.dlid
	copy(w[56+44:], []byte{0x00, 0xC0, 0x00, 0x01})                     // opa.slid
	if !bytes.Equal(got, w) {
		t.Fatalf("PathRecord Get: got %d bytes\n%s\nwant %d\n%s", len(got), hex.Dump(got), len(w), hex.Dump(w))
	}
}
