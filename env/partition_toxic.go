package env

import "github.com/Shopify/toxiproxy/v2/toxics"

// PartitionToxic is the toxic type of a silent partition on a link: every
// byte is dropped, and a close is not passed on either. toxiproxy's own
// timeout toxic (with timeout 0) drops bytes but closes the server's side
// as soon as the client closes its own, which a real partition cannot do:
// the FIN is lost with everything else, and the server keeps the session,
// and a PostgreSQL session its advisory locks, until TCP keepalive gives
// up (about two hours by default). Removing the toxic (healing) closes
// the connection, as the server's next retransmission would meet a reset.
const PartitionToxic = "partition"

type partitionToxic struct{}

func (partitionToxic) Pipe(stub *toxics.ToxicStub) {
	input := stub.Input
	for {
		select {
		case <-stub.Interrupt:
			return
		case c, ok := <-input:
			if !ok || c == nil {
				input = nil // the client closed: keep its close from the server
			}
			// Drop the data on the ground.
		}
	}
}

// Cleanup closes the connection when the partition heals: the bytes it
// dropped leave the stream unusable.
func (partitionToxic) Cleanup(stub *toxics.ToxicStub) { stub.Close() }

func init() { toxics.Register(PartitionToxic, new(partitionToxic)) }
