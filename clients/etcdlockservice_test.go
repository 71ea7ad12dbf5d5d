package clients

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// TestLockServiceMessages: the Lock service's messages as written here
// are v3lockpb's (LockRequest{name: 1, lease: 2}, UnlockRequest{key: 1}),
// and the key is read from a LockResponse after its header (field 1).
func TestLockServiceMessages(t *testing.T) {
	req := lockRequest("/locksim/lock/L", 0x5d26a2340265310b)
	num, typ, n := protowire.ConsumeTag(req)
	name, m := protowire.ConsumeBytes(req[n:])
	if num != 1 || typ != protowire.BytesType || string(name) != "/locksim/lock/L" {
		t.Fatalf("LockRequest's name: field %d, %q", num, name)
	}
	rest := req[n+m:]
	num, typ, n = protowire.ConsumeTag(rest)
	lease, _ := protowire.ConsumeVarint(rest[n:])
	if num != 2 || typ != protowire.VarintType || lease != 0x5d26a2340265310b {
		t.Fatalf("LockRequest's lease: field %d, %x", num, lease)
	}
	if num, _, _ := protowire.ConsumeTag(unlockRequest("k")); num != 1 {
		t.Fatalf("UnlockRequest's key is field %d", num)
	}
	header := protowire.AppendTag(nil, 3, protowire.VarintType) // ResponseHeader{revision: 7}
	header = protowire.AppendVarint(header, 7)
	resp := protowire.AppendTag(nil, 1, protowire.BytesType)
	resp = protowire.AppendBytes(resp, header)
	resp = protowire.AppendTag(resp, 2, protowire.BytesType)
	resp = protowire.AppendBytes(resp, []byte("/locksim/lock/L/5d26"))
	if k, err := lockResponseKey(resp); err != nil || k != "/locksim/lock/L/5d26" {
		t.Fatalf("LockResponse's key: %q, %v", k, err)
	}
	if _, err := lockResponseKey(resp[:len(header)+2]); err == nil {
		t.Fatal("a LockResponse without a key was read")
	}
}
