package docker

import (
	"fmt"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/ids"
)

// The owner labels every object carries ("Token in every request"), and
// the one kind label that says what D made it for.
const (
	LabelRunner     = "io.codeboost.runner"
	LabelAttempt    = "io.codeboost.attempt"
	LabelAllocation = "io.codeboost.allocation"
	LabelKind       = "io.codeboost.kind"
	// LabelPrefix is what every codeboost label starts with: an object
	// with one but no runner label is from an older build (legacy).
	LabelPrefix = "io.codeboost."
)

// Kind is the value of the kind label: what D made an object for. Recovery
// removes only objects whose kind it knows.
type Kind string

// The kinds D makes.
const (
	KindAgent   Kind = "agent"     // an agent container (the invocation)
	KindNetwork Kind = "network"   // a network D made for an invocation
	KindKeeper  Kind = "keeper"    // task storage's keeper container (never started)
	KindWork    Kind = "task-work" // task storage's work-tree volume
	KindMeta    Kind = "task-meta" // task storage's git metadata volume
	KindSeeder  Kind = "seeder"    // fills fresh task storage (allocation)
	KindExport  Kind = "export"    // ExportTaskDiff's container
	KindInspect Kind = "inspect"   // InspectTaskChanges' container
	KindTree    Kind = "tree"      // CheckTaskTree's container
	KindCommit  Kind = "commit"    // CommitTaskChanges' container
)

// storageKind reports whether k is a part of task storage, which recovery
// keeps whole.
func storageKind(k Kind) bool { return k == KindKeeper || k == KindWork || k == KindMeta }

// ownerLabels are the labels of an object made for owner, of kind k.
func ownerLabels(o dadapter.StorageOwner, k Kind) map[string]string {
	return map[string]string{
		LabelRunner: o.RunnerOwner, LabelAttempt: o.AttemptID, LabelAllocation: o.AllocationID, LabelKind: string(k),
	}
}

// matches reports whether labels carry exactly owner's three owner labels:
// the proof of ownership for an object found by name.
func matches(labels map[string]string, o dadapter.StorageOwner) bool {
	return labels[LabelRunner] == o.RunnerOwner && labels[LabelAttempt] == o.AttemptID &&
		labels[LabelAllocation] == o.AllocationID
}

// checkOwner refuses an owner whose IDs cannot be written as labels or
// used in object names: the runner token is 32 lowercase hex, the attempt
// and allocation IDs lowercase UUIDs.
func checkOwner(o dadapter.StorageOwner) error {
	if !ids.ValidToken(o.RunnerOwner) {
		return fmt.Errorf("runner owner %q is not 32 lowercase hex", o.RunnerOwner)
	}
	if !ids.ValidUUID(o.AttemptID) {
		return fmt.Errorf("attempt ID %q is not a lowercase UUID", o.AttemptID)
	}
	if !ids.ValidUUID(o.AllocationID) {
		return fmt.Errorf("allocation ID %q is not a lowercase UUID", o.AllocationID)
	}
	return nil
}

// objectName is the name of an object of kind k of an allocation: names
// are unique per allocation, so a create that collides means the ID is
// already in use.
func objectName(k Kind, allocationID string) string {
	return "codeboost-" + string(k) + "-" + allocationID
}
