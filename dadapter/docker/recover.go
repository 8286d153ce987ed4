package docker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/dadapter/docker/image"
	"github.com/codeboost/codeboost/ids"
)

// The keeper's labels that carry what export needs after a restart (the
// storage's Base and MetadataBaseline; labelKeeperRepository, beside them,
// what commit needs): a recovery handle is built from them, never from
// F's rows.
const (
	labelKeeperBase     = LabelPrefix + "base"
	labelKeeperBaseline = LabelPrefix + "baseline"
)

// RecoverLeftovers is "Scoped recovery": it acts only on objects whose
// runner label is owner, so runners of other databases on the same engine
// never lose anything to it. It removes what an invocation or a storage
// operation of a crashed process left (agent, seeder, export, inspect and
// commit containers, then networks), keeps task storage whole and returns
// one authenticated handle per allocation ("Recovered storage handles"),
// and lists, without touching, what it cannot prove is this runner's to
// remove ("Unowned resources"). Anything it cannot remove, or an engine it cannot
// reach, fails the whole call: no handle is issued, and the error names
// what was removed.
func (d *D) RecoverLeftovers(ctx context.Context, owner string, done func(dadapter.RecoveryReport, error)) {
	go func() {
		r, err := d.recoverLeftovers(ctx, owner)
		if err != nil {
			done(dadapter.RecoveryReport{}, fmt.Errorf("docker: recovery of runner %s: %w", owner, err))
			return
		}
		done(r, nil)
	}()
}

func (d *D) recoverLeftovers(ctx context.Context, owner string) (dadapter.RecoveryReport, error) {
	if !ids.ValidToken(owner) {
		return dadapter.RecoveryReport{}, fmt.Errorf("runner owner %.40q is not 32 lowercase hex", owner)
	}
	if err := d.refuseWhileHeld(owner); err != nil {
		return dadapter.RecoveryReport{}, err
	}
	objs, err := d.inventory(ctx)
	if err != nil {
		return dadapter.RecoveryReport{}, fmt.Errorf("nothing removed: %w", err)
	}
	p := classify(objs, owner)
	if err := d.removeAll(ctx, p.remove); err != nil {
		return dadapter.RecoveryReport{}, err
	}
	if err := d.hold(owner, p.storage); err != nil {
		return dadapter.RecoveryReport{}, err
	}
	r := dadapter.RecoveryReport{Unowned: p.unowned}
	for _, st := range p.storage {
		r.Storage = append(r.Storage, st)
	}
	return r, nil
}

// refuseWhileHeld: this process's own storage and invocations of owner are
// live, not leftovers; recovering under them would remove a running
// agent's container or issue a second handle for held storage.
func (d *D) refuseWhileHeld(owner string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.holdsLocked(owner)
}

// holdsLocked is refuseWhileHeld's check; d.mu is held.
func (d *D) holdsLocked(owner string) error {
	for _, st := range d.held {
		if st.owner.RunnerOwner == owner {
			return fmt.Errorf("this process holds task storage %s of the runner: recovery refused", st.owner.AllocationID)
		}
	}
	for _, h := range d.handles {
		if h.in.RunnerOwner == owner {
			return fmt.Errorf("this process runs attempt %s of the runner: recovery refused", h.in.AttemptID)
		}
	}
	return nil
}

// hold registers the recovered handles in the ownership map, checking
// again under the lock that nothing of owner was allocated meanwhile.
func (d *D) hold(owner string, handles []*storage) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.holdsLocked(owner); err != nil {
		return err
	}
	for _, st := range handles {
		if d.held[st.owner.AllocationID] != nil {
			return fmt.Errorf("allocation %s is held by this process under another runner: no handles issued", st.owner.AllocationID)
		}
	}
	for _, st := range handles {
		d.held[st.owner.AllocationID] = st
	}
	return nil
}

// object is one container, volume or network, as recovery sees it.
type object struct {
	kind   dadapter.ResourceKind
	id     string // the Docker ID (a volume's is its name)
	name   string
	labels map[string]string
}

func (o object) label() Kind { return Kind(o.labels[LabelKind]) }

func (o object) owner() dadapter.StorageOwner {
	return dadapter.StorageOwner{RunnerOwner: o.labels[LabelRunner], AttemptID: o.labels[LabelAttempt], AllocationID: o.labels[LabelAllocation]}
}

func (o object) describe() string { return fmt.Sprintf("%s %s (%s)", o.kind, o.name, short(o.id)) }

func (o object) unowned(reason dadapter.UnownedReason) dadapter.Unowned {
	return dadapter.Unowned{Kind: o.kind, Name: o.name, Reason: reason, Remove: dadapter.RemoveCommand(o.kind, o.name)}
}

// inventory lists every container, volume and network of the engine. The
// search for objects without a runner label (from older builds) must see
// the whole engine, since no filter matches a label prefix; one unfiltered
// list of each kind also gives one snapshot to classify.
func (d *D) inventory(ctx context.Context) ([]object, error) {
	var objs []object
	err := d.call(ctx, func(ctx context.Context) error {
		res, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true})
		for _, c := range res.Items {
			name := c.ID
			if len(c.Names) > 0 {
				name = strings.TrimPrefix(c.Names[0], "/")
			}
			objs = append(objs, object{kind: dadapter.KindContainer, id: c.ID, name: name, labels: c.Labels})
		}
		return wrap("list containers", err)
	})
	if err != nil {
		return nil, err
	}
	err = d.call(ctx, func(ctx context.Context) error {
		res, err := d.cli.VolumeList(ctx, client.VolumeListOptions{})
		for _, v := range res.Items {
			objs = append(objs, object{kind: dadapter.KindVolume, id: v.Name, name: v.Name, labels: v.Labels})
		}
		return wrap("list volumes", err)
	})
	if err != nil {
		return nil, err
	}
	err = d.call(ctx, func(ctx context.Context) error {
		res, err := d.cli.NetworkList(ctx, client.NetworkListOptions{})
		for _, n := range res.Items {
			objs = append(objs, object{kind: dadapter.KindNetwork, id: n.ID, name: n.Name, labels: n.Labels})
		}
		return wrap("list networks", err)
	})
	return objs, err
}

func wrap(what string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// plan is what recovery does with each object of the inventory.
type plan struct {
	remove  []object   // this runner's leftovers D made: removed, networks last
	storage []*storage // this runner's task storage, whole and consistent
	unowned []dadapter.Unowned
}

// removable are the kinds recovery removes, by the object type D makes
// them as; task storage is kept, and anything else is not D's.
var removable = map[dadapter.ResourceKind][]Kind{
	dadapter.KindContainer: {KindAgent, KindSeeder, KindExport, KindInspect, KindTree, KindCommit},
	dadapter.KindNetwork:   {KindNetwork},
}

// classify sorts the inventory for owner. An object is removed only when
// it carries a kind D makes it as and complete owner labels; task storage
// only when every part agrees; objects of other runners are not looked at.
func classify(objs []object, owner string) plan {
	var p plan
	parts := map[string][]object{} // task storage, by allocation label
	for _, o := range objs {
		runner, ok := o.labels[LabelRunner]
		switch {
		case !ok:
			if codeboostLabelled(o.labels) {
				p.unowned = append(p.unowned, o.unowned(dadapter.NoRunnerLabel))
			}
		case runner != owner:
		case storageKind(o.label()):
			parts[o.labels[LabelAllocation]] = append(parts[o.labels[LabelAllocation]], o)
		case slices.Contains(removable[o.kind], o.label()) && checkOwner(o.owner()) == nil:
			p.remove = append(p.remove, o)
		default:
			p.unowned = append(p.unowned, o.unowned(dadapter.UnknownKind))
		}
	}
	for _, group := range parts {
		if st, ok := recoveredStorage(group); ok {
			p.storage = append(p.storage, st)
			continue
		}
		for _, o := range group {
			p.unowned = append(p.unowned, o.unowned(dadapter.InconsistentStorage))
		}
	}
	slices.SortFunc(p.remove, func(a, b object) int {
		return cmp.Or(cmp.Compare(removalOrder(a), removalOrder(b)), cmp.Compare(a.name, b.name))
	})
	slices.SortFunc(p.storage, func(a, b *storage) int {
		return cmp.Or(cmp.Compare(a.owner.AttemptID, b.owner.AttemptID), cmp.Compare(a.owner.AllocationID, b.owner.AllocationID))
	})
	slices.SortFunc(p.unowned, func(a, b dadapter.Unowned) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Reason, b.Reason))
	})
	return p
}

// removalOrder puts networks last: a network a container still uses
// cannot be removed.
func removalOrder(o object) int {
	if o.kind == dadapter.KindNetwork {
		return 1
	}
	return 0
}

// codeboostLabelled reports whether an object carries a codeboost label.
// The image content label does not count: every container made from an
// image of package image inherits it, whoever made the container.
func codeboostLabelled(labels map[string]string) bool {
	for k := range labels {
		if strings.HasPrefix(k, LabelPrefix) && k != image.ContentLabel {
			return true
		}
	}
	return false
}

// recoveredStorage builds the handle for one allocation's parts after
// checking each: complete owner labels, one attempt for all, at most one
// part of each kind, each the object type D makes it as. A crash during
// allocation can leave any subset, so a handle names whichever parts
// exist; base and baseline come from the keeper, when there is one.
func recoveredStorage(group []object) (*storage, bool) {
	st := &storage{owner: group[0].owner()}
	seen := map[Kind]bool{}
	for _, o := range group {
		if checkOwner(o.owner()) != nil || o.owner() != st.owner || seen[o.label()] {
			return nil, false
		}
		seen[o.label()] = true
		switch {
		case o.label() == KindKeeper && o.kind == dadapter.KindContainer:
			st.keeper, st.base, st.baseline = o.id, o.labels[labelKeeperBase], o.labels[labelKeeperBaseline]
			st.repository = o.labels[labelKeeperRepository]
		case o.label() == KindWork && o.kind == dadapter.KindVolume:
			st.work = o.name
		case o.label() == KindMeta && o.kind == dadapter.KindVolume:
			st.meta = o.name
		default:
			return nil, false
		}
	}
	return st, true
}

// removeAll removes the leftovers by ID, in plan order, and fails naming
// what it did and did not remove.
func (d *D) removeAll(ctx context.Context, objs []object) error {
	var removed, failed []string
	for _, o := range objs {
		if err := d.call(ctx, func(ctx context.Context) error { return d.removeObject(ctx, o) }); err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", o.describe(), err))
			continue
		}
		removed = append(removed, o.describe())
	}
	if len(failed) == 0 {
		return nil
	}
	if len(removed) == 0 {
		removed = []string{"nothing"}
	}
	return errors.New(bound("could not remove " + strings.Join(failed, "; ") + "; removed " + strings.Join(removed, ", ")))
}

func (d *D) removeObject(ctx context.Context, o object) error {
	var err error
	switch o.kind {
	case dadapter.KindContainer:
		_, err = d.cli.ContainerRemove(ctx, o.id, client.ContainerRemoveOptions{Force: true})
	case dadapter.KindNetwork:
		_, err = d.cli.NetworkRemove(ctx, o.id, client.NetworkRemoveOptions{})
	default:
		return fmt.Errorf("recovery does not remove a %s", o.kind)
	}
	return gone(err)
}
