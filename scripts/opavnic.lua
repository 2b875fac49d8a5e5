-- opavnic.lua: a Wireshark dissector for opavnic's Omni-Path 16B packets over
-- UDP (docs/wire.md): every 16B header field, the VNIC (L4 0x78) and
-- management (L4 0x08) payloads, pad, ICRC with a good/bad verdict, and tail.
-- The inner Ethernet frame goes to Wireshark's eth_withoutfcs dissector;
-- MADs get their common header decoded with attribute names.
--
--   tshark -X lua_script:scripts/opavnic.lua -r capture.pcap -V
--   wireshark -X lua_script:scripts/opavnic.lua capture.pcap
--
-- or copy it into ~/.local/lib/wireshark/plugins/. The UDP port (default
-- 4793) is a preference: Edit > Preferences > Protocols > OPA16B.

local bit = bit32 or bit -- Lua 5.2 (bit32) or LuaBitOp (bit); results normalised by u32

local function u32(x) return x % 4294967296 end
local function band(a, b) return u32(bit.band(a, b)) end
local function bxor(a, b) return u32(bit.bxor(a, b)) end
local function rshift(a, n) return u32(bit.rshift(a, n)) end

local opa = Proto("opa16b", "Omni-Path 16B (opavnic)")

-- Header fields, as the little-endian 32-bit words of docs/wire.md §2:
-- lrh0 = SLID[19:0] | LEN<<20 | BECN<<31
-- lrh1 = DLID[19:0] | SC<<20 | RC<<25 | FECN<<28 | L2<<29 | LT<<31
-- lrh2 = L4 | SLID[23:20]<<8 | DLID[23:20]<<12 | PKEY<<16
-- lrh3 = Entropy | Age<<16 | reserved<<24
local l4_names = { [0x78] = "Ethernet (VNIC)", [0x08] = "Fabric management (MAD)" }
local l2_names = { [0] = "8B", [1] = "10B", [2] = "16B", [3] = "9B" }

local f = {
	slid = ProtoField.uint32("opa16b.slid", "SLID", base.HEX),
	dlid = ProtoField.uint32("opa16b.dlid", "DLID", base.HEX),
	slid_lo = ProtoField.uint32("opa16b.slid_lo", "SLID[19:0]", base.HEX, nil, 0x000FFFFF),
	len = ProtoField.uint32("opa16b.len", "LEN (QWs)", base.DEC, nil, 0x7FF00000),
	becn = ProtoField.bool("opa16b.becn", "BECN", 32, nil, 0x80000000),
	dlid_lo = ProtoField.uint32("opa16b.dlid_lo", "DLID[19:0]", base.HEX, nil, 0x000FFFFF),
	sc = ProtoField.uint32("opa16b.sc", "SC", base.DEC, nil, 0x01F00000),
	rc = ProtoField.uint32("opa16b.rc", "RC", base.DEC, nil, 0x0E000000),
	fecn = ProtoField.bool("opa16b.fecn", "FECN", 32, nil, 0x10000000),
	l2 = ProtoField.uint32("opa16b.l2", "L2", base.DEC, l2_names, 0x60000000),
	lt = ProtoField.bool("opa16b.lt", "LT", 32, nil, 0x80000000),
	l4 = ProtoField.uint32("opa16b.l4", "L4 type", base.HEX, l4_names, 0x000000FF),
	slid_hi = ProtoField.uint32("opa16b.slid_hi", "SLID[23:20]", base.HEX, nil, 0x00000F00),
	dlid_hi = ProtoField.uint32("opa16b.dlid_hi", "DLID[23:20]", base.HEX, nil, 0x0000F000),
	pkey = ProtoField.uint32("opa16b.pkey", "PKEY", base.HEX, nil, 0xFFFF0000),
	entropy = ProtoField.uint32("opa16b.entropy", "Entropy", base.HEX, nil, 0x0000FFFF),
	age = ProtoField.uint32("opa16b.age", "Age", base.DEC, nil, 0x00FF0000),
	hdr_rsvd = ProtoField.uint32("opa16b.reserved", "Reserved", base.HEX, nil, 0xFF000000),

	vnic_rsvd = ProtoField.uint16("opa16b.vnic.reserved", "Reserved", base.HEX),
	vesw_id = ProtoField.uint16("opa16b.vnic.vesw_id", "vesw_id", base.DEC),

	dqpn = ProtoField.uint32("opa16b.dqpn", "Destination QPN", base.DEC, { [0] = "SMI", [1] = "GSI" }, 0x00FFFFFF),
	sqpn = ProtoField.uint32("opa16b.sqpn", "Source QPN", base.DEC, { [0] = "SMI", [1] = "GSI" }, 0x00FFFFFF),

	pad = ProtoField.bytes("opa16b.pad", "Pad"),
	icrc = ProtoField.uint32("opa16b.icrc", "ICRC", base.HEX),
	icrc_calc = ProtoField.uint32("opa16b.icrc.computed", "Computed ICRC", base.HEX),
	icrc_status = ProtoField.string("opa16b.icrc.status", "ICRC status"),
	icrc_good = ProtoField.bool("opa16b.icrc.good", "ICRC good"),
	tail = ProtoField.uint8("opa16b.tail", "Tail", base.HEX),
	tail_pad = ProtoField.uint8("opa16b.tail.pad", "Pad count", base.DEC, nil, 0x07),
	tail_lt = ProtoField.uint8("opa16b.tail.lt", "LT", base.DEC, nil, 0xC0),
}

-- MAD common header (IB spec 13.4.3; 24 bytes, big-endian).
local class_names = {
	[0x01] = "SubnLIDRouted (SMP)", [0x81] = "SubnDirectedRoute (SMP)", [0x03] = "SubnAdm (SA)",
	[0x04] = "PerfMgmt", [0x34] = "VEMA (Intel EMA)", [0x3F] = "opavnic directory",
}
local method_names = {
	[0x01] = "Get", [0x02] = "Set", [0x03] = "Send", [0x05] = "Trap", [0x06] = "Report",
	[0x07] = "TrapRepress", [0x12] = "GetTable", [0x13] = "GetTraceTable", [0x14] = "GetMulti",
	[0x15] = "Delete", [0x81] = "GetResp", [0x86] = "ReportResp", [0x92] = "GetTableResp",
	[0x94] = "GetMultiResp", [0x95] = "DeleteResp",
}
local attrs = {
	vema = {
		[0x0001] = "ClassPortInfo", [0x0002] = "Notice", [0x0011] = "VESWPortInfo",
		[0x0012] = "VESWPortMACEntries", [0x0013] = "IfaceUcastMACs", [0x0014] = "IfaceMcastMACs",
		[0x0015] = "DeleteVESW", [0x0020] = "VESWPortSummaryCounters", [0x0022] = "VESWPortErrorCounters",
	},
	smp = {
		[0x0002] = "Notice", [0x0010] = "NodeDescription", [0x0011] = "NodeInfo", [0x0012] = "SwitchInfo",
		[0x0015] = "PortInfo", [0x0016] = "PartitionTable", [0x0017] = "SLToSCMap", [0x0018] = "VLArbitration",
		[0x0020] = "SMInfo", [0x0032] = "CableInfo", [0x0080] = "Aggregate", [0x0082] = "SCToSLMap",
		[0x0083] = "SCToVLrMap", [0x0084] = "SCToVLtMap", [0x0085] = "SCToVLntMap", [0x0087] = "PortStateInfo",
		[0x008A] = "BufferControlTable",
	},
	sa = {
		[0x0001] = "ClassPortInfo", [0x0002] = "Notice", [0x0003] = "InformInfo", [0x0011] = "NodeRecord",
		[0x0012] = "PortInfoRecord", [0x0020] = "LinkRecord", [0x0031] = "ServiceRecord",
		[0x0033] = "PKeyTableRecord", [0x0035] = "PathRecord", [0x0038] = "MCMemberRecord",
		[0x003A] = "MultiPathRecord", [0x00F3] = "InformInfoRecord",
	},
	dir = { [0xFF10] = "DirectoryBlock", [0xFF11] = "MulticastBlock" },
}
local class_attrs = { [0x01] = attrs.smp, [0x81] = attrs.smp, [0x03] = attrs.sa, [0x34] = attrs.vema, [0x3F] = attrs.dir }

local m = {
	base_version = ProtoField.uint8("opa16b.mad.base_version", "Base version", base.HEX),
	class = ProtoField.uint8("opa16b.mad.class", "Management class", base.HEX, class_names),
	class_version = ProtoField.uint8("opa16b.mad.class_version", "Class version", base.HEX),
	method = ProtoField.uint8("opa16b.mad.method", "Method", base.HEX, method_names),
	status = ProtoField.uint16("opa16b.mad.status", "Status", base.HEX),
	class_specific = ProtoField.uint16("opa16b.mad.class_specific", "Class specific", base.HEX),
	tid = ProtoField.uint64("opa16b.mad.tid", "Transaction ID", base.HEX),
	attr_id = ProtoField.uint16("opa16b.mad.attr_id", "Attribute ID", base.HEX),
	attr_name = ProtoField.string("opa16b.mad.attr_name", "Attribute"),
	attr_rsvd = ProtoField.uint16("opa16b.mad.reserved", "Reserved", base.HEX),
	attr_mod = ProtoField.uint32("opa16b.mad.attr_mod", "Attribute modifier", base.HEX),
	data = ProtoField.bytes("opa16b.mad.data", "MAD data"),
}

local fields = {}
for _, v in pairs(f) do fields[#fields + 1] = v end
for _, v in pairs(m) do fields[#fields + 1] = v end
opa.fields = fields

local ef_bad_icrc = ProtoExpert.new("opa16b.icrc.bad", "Bad ICRC", expert.group.CHECKSUM, expert.severity.ERROR)
local ef_malformed = ProtoExpert.new("opa16b.malformed", "Malformed 16B packet", expert.group.MALFORMED, expert.severity.ERROR)
opa.experts = { ef_bad_icrc, ef_malformed }

opa.prefs.port = Pref.uint("UDP port", 4793, "UDP port of opavnic 16B packets")

-- CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320) table.
local crc_table = {}
for i = 0, 255 do
	local c = i
	for _ = 1, 8 do
		if band(c, 1) ~= 0 then
			c = bxor(0xEDB88320, rshift(c, 1))
		else
			c = rshift(c, 1)
		end
	end
	crc_table[i] = c
end

-- icrc computes the ICRC (docs/wire.md §5) over bytes 0..n-1 of tvb: CRC-32 with
-- BECN, SC and FECN (QW0) and Age (QW1) counted as ones.
local mask = { [3] = 0x80, [6] = 0xF0, [7] = 0x11, [14] = 0xFF }
local function icrc(tvb, n)
	local crc = 0xFFFFFFFF
	local bytes = tvb:bytes(0, n)
	for i = 0, n - 1 do
		local b = bytes:get_index(i)
		if mask[i] then b = u32(bit.bor(b, mask[i])) end
		crc = bxor(crc_table[band(bxor(crc, b), 0xFF)], rshift(crc, 8))
	end
	return bxor(crc, 0xFFFFFFFF)
end

local eth_dissector = Dissector.get("eth_withoutfcs")

local function dissect_mad(tvb, pinfo, tree, root)
	if tvb:len() < 24 then
		tree:add_proto_expert_info(ef_malformed, "MAD shorter than its 24-byte header")
		return
	end
	local class = tvb(1, 1):uint()
	local method = tvb(3, 1):uint()
	local attr = tvb(16, 2):uint()
	local names = class_attrs[class] or {}
	local attr_name = names[attr] or string.format("0x%04X", attr)
	local mt = tree:add(opa, tvb(), "MAD: " .. (class_names[class] or string.format("class 0x%02X", class)) ..
		" " .. (method_names[method] or string.format("0x%02X", method)) .. " " .. attr_name)
	mt:add(m.base_version, tvb(0, 1))
	mt:add(m.class, tvb(1, 1))
	mt:add(m.class_version, tvb(2, 1))
	mt:add(m.method, tvb(3, 1))
	mt:add(m.status, tvb(4, 2))
	mt:add(m.class_specific, tvb(6, 2))
	mt:add(m.tid, tvb(8, 8))
	mt:add(m.attr_id, tvb(16, 2))
	mt:add(m.attr_name, tvb(16, 2), attr_name):set_generated()
	mt:add(m.attr_rsvd, tvb(18, 2))
	mt:add(m.attr_mod, tvb(20, 4))
	if tvb:len() > 24 then mt:add(m.data, tvb(24)) end
	pinfo.cols.info:set(string.format("MAD %s %s %s TID 0x%s",
		class_names[class] or string.format("class 0x%02X", class),
		method_names[method] or string.format("0x%02X", method), attr_name, tvb(8, 8):bytes():tohex()))
end

function opa.dissector(tvb, pinfo, root)
	local n = tvb:len()
	if n < 24 then return 0 end
	pinfo.cols.protocol:set("OPA16B")
	local tree = root:add(opa, tvb(), "Omni-Path 16B")
	local lrh0, lrh1 = tvb(0, 4):le_uint(), tvb(4, 4):le_uint()
	local lrh2, lrh3 = tvb(8, 4):le_uint(), tvb(12, 4):le_uint()
	local slid = band(lrh0, 0xFFFFF) + band(rshift(lrh2, 8), 0xF) * 0x100000
	local dlid = band(lrh1, 0xFFFFF) + band(rshift(lrh2, 12), 0xF) * 0x100000
	local qws = band(rshift(lrh0, 20), 0x7FF)
	local l4 = band(lrh2, 0xFF)
	local pkey = rshift(lrh2, 16)

	local h = tree:add(opa, tvb(0, 16), "16B header")
	h:add(f.slid, tvb(0, 12), slid):set_generated()
	h:add(f.dlid, tvb(4, 12), dlid):set_generated()
	local qw0 = h:add(opa, tvb(0, 8), "QW0 (little-endian)")
	qw0:add_le(f.slid_lo, tvb(0, 4))
	qw0:add_le(f.len, tvb(0, 4))
	qw0:add_le(f.becn, tvb(0, 4))
	qw0:add_le(f.dlid_lo, tvb(4, 4))
	qw0:add_le(f.sc, tvb(4, 4))
	qw0:add_le(f.rc, tvb(4, 4))
	qw0:add_le(f.fecn, tvb(4, 4))
	qw0:add_le(f.l2, tvb(4, 4))
	qw0:add_le(f.lt, tvb(4, 4))
	local qw1 = h:add(opa, tvb(8, 8), "QW1 (little-endian)")
	qw1:add_le(f.l4, tvb(8, 4))
	qw1:add_le(f.slid_hi, tvb(8, 4))
	qw1:add_le(f.dlid_hi, tvb(8, 4))
	qw1:add_le(f.pkey, tvb(8, 4))
	qw1:add_le(f.entropy, tvb(12, 4))
	qw1:add_le(f.age, tvb(12, 4))
	qw1:add_le(f.hdr_rsvd, tvb(12, 4))
	tree:append_text(string.format(", SLID 0x%06X, DLID 0x%06X, PKEY 0x%04X, L4 0x%02X", slid, dlid, pkey, l4))

	if qws * 8 ~= n then
		tree:add_proto_expert_info(ef_malformed, string.format("LEN %d QWs (%d bytes) but the datagram has %d", qws, qws * 8, n))
	end
	-- Trailer: ICRC (4, little-endian) and tail byte, at the datagram's end.
	local tail = tvb(n - 1, 1):uint()
	local padn = band(tail, 7)
	local stored = tvb(n - 5, 4):le_uint()
	local computed = icrc(tvb, n - 5)
	local good = stored == computed

	local payload_end = n - 5 - padn
	if l4 == 0x78 and payload_end >= 20 then
		local vesw = tvb(18, 2):le_uint()
		local v = tree:add(opa, tvb(16, 4), "VNIC L4 header")
		v:add_le(f.vnic_rsvd, tvb(16, 2))
		v:add_le(f.vesw_id, tvb(18, 2))
		tree:append_text(string.format(", vesw %d", band(vesw, 0xFFF)))
		if padn > 0 then tree:add(f.pad, tvb(payload_end, padn)) end
		if eth_dissector and payload_end > 20 then
			eth_dissector:call(tvb(20, payload_end - 20):tvb(), pinfo, root)
		end
	elseif l4 == 0x08 and payload_end >= 24 then
		tree:add(f.dqpn, tvb(16, 4))
		tree:add(f.sqpn, tvb(20, 4))
		if padn > 0 then tree:add(f.pad, tvb(payload_end, padn)) end
		dissect_mad(tvb(24, payload_end - 24):tvb(), pinfo, tree, root)
	elseif payload_end >= 16 and padn > 0 then
		tree:add(f.pad, tvb(payload_end, padn))
	end

	local ic = tree:add_le(f.icrc, tvb(n - 5, 4))
	ic:append_text(good and " [good]" or string.format(" [bad: computed 0x%08X]", computed))
	tree:add(f.icrc_calc, tvb(n - 5, 4), computed):set_generated()
	tree:add(f.icrc_status, tvb(n - 5, 4), good and "good" or "bad"):set_generated()
	tree:add(f.icrc_good, tvb(n - 5, 4), good):set_generated()
	if not good then
		ic:add_proto_expert_info(ef_bad_icrc, string.format("Bad ICRC: stored 0x%08X, computed 0x%08X", stored, computed))
		pinfo.cols.info:append(" [bad ICRC]")
	end
	local t = tree:add(f.tail, tvb(n - 1, 1))
	t:add(f.tail_pad, tvb(n - 1, 1))
	t:add(f.tail_lt, tvb(n - 1, 1))
	return n
end

local registered_port = 0
local function register()
	local udp = DissectorTable.get("udp.port")
	if registered_port ~= 0 then udp:remove(registered_port, opa) end
	registered_port = opa.prefs.port
	udp:add(registered_port, opa)
end
opa.prefs_changed = register
register()
