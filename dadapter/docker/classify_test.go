package docker

import (
	"testing"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/dtest"
)

// TestRecoveryRemovesNetworksLast: the engine refuses to remove a network
// a container is still attached to, so recovery's removal plan lists every
// leftover container before any network, whatever their names (here the
// network's name sorts first). By name alone, the network's removal would
// fail while the agent container that uses it is still there, and recovery
// would report a leftover it was about to remove. No Docker is needed: the
// plan is made from an inventory.
// Sweep survivor (seed 8675309): dadapter/docker/recover.go:removalOrder:drop-guard:c2a55802.
func TestRecoveryRemovesNetworksLast(t *testing.T) {
	owner := dadapter.StorageOwner{RunnerOwner: dtest.NewToken(), AttemptID: dtest.NewID(), AllocationID: dtest.NewID()}
	inventory := []object{
		{kind: dadapter.KindContainer, id: "c2", name: "codeboost-seeder-2", labels: ownerLabels(owner, KindSeeder)},
		{kind: dadapter.KindNetwork, id: "n1", name: "a-codeboost-network", labels: ownerLabels(owner, KindNetwork)},
		{kind: dadapter.KindContainer, id: "c1", name: "codeboost-agent-1", labels: ownerLabels(owner, KindAgent)},
	}
	p := classify(inventory, owner.RunnerOwner)
	var got []string
	for _, o := range p.remove {
		got = append(got, o.id)
	}
	if len(got) != 3 || got[0] != "c1" || got[1] != "c2" || got[2] != "n1" {
		t.Fatalf("recovery removes %v, want the containers by name, then the network: [c1 c2 n1]", got)
	}
	if len(p.unowned) != 0 || len(p.storage) != 0 {
		t.Fatalf("unowned %v, storage %v; want every object removed", p.unowned, p.storage)
	}
}
