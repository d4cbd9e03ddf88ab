# SPDX-License-Identifier: MIT
# Sourced by the tests that read a Perfetto trace back: pf_decode decodes
# the trace on standard input as text with protoc, against our subset of
# Perfetto's schema (tests/proto), an implementation of protobuf other
# than our writer's.  Needs MT_ROOT.
pf_decode() {
	protoc --decode=perfetto.protos.Trace -I "$MT_ROOT/tests/proto" \
		"$MT_ROOT/tests/proto/perfetto_subset.proto"
}
