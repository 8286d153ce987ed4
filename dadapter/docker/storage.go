package docker

import (
	"context"
	"errors"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter"
)

// storage is one allocation's task storage: two volumes and the keeper
// container that holds them (never started: the archive API reads and
// writes a stopped container's volumes). The work volume is the work tree,
// writable by the agent at /task; the meta volume is the git metadata,
// mounted read-only for the agent at /task/.git, so an agent cannot
// commit, stage or rewrite history, and the seeder's metadata baseline
// stays provable. A recovery handle is the same type, built only after
// every part was inspected and all three owner labels matched.
type storage struct {
	dadapter.StorageSeal
	owner    dadapter.StorageOwner
	base     string // the commit the storage was seeded from (40 hex)
	baseline string // the metadata baseline: a digest of the meta volume after seeding
	work     string // the work volume's name
	meta     string // the meta volume's name
	keeper   string // the keeper container's ID ("" if a crash left none)
	// repository is the user's repository the storage was seeded from:
	// it names the runner-owned repository the attempt's commit goes
	// into and is released from. Recovery reads it from the keeper's
	// labelKeeperRepository; "" when a crash left no keeper.
	repository string
}

// labelKeeperRepository is the keeper's label that carries the storage's
// repository, beside its base and baseline, for a recovered handle.
const labelKeeperRepository = LabelPrefix + "repository"

func (s *storage) Owner() dadapter.StorageOwner { return s.owner }
func (s *storage) MetadataBaseline() string     { return s.baseline }
func (s *storage) Base() string                 { return s.base }

// Mount points inside the containers D runs.
const (
	taskDir = "/task"      // the work volume
	metaDir = "/task/.git" // the meta volume, read-only for the agent
)

// ErrNotHeld is the refusal of task storage this process does not hold:
// removed already, or never this D's (another D value, or a value from a
// report). Only an allocation or a recovery registers storage.
var ErrNotHeld = errors.New("task storage not held by this process")

// heldStorage returns fs as this D's storage, if this process holds it now.
func (d *D) heldStorage(fs dadapter.TaskFilesystems) (*storage, error) {
	s, ok := fs.(*storage)
	if !ok || s == nil {
		return nil, fmt.Errorf("%w: not the Docker adapter's task storage", ErrNotHeld)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.held[s.owner.AllocationID] != s {
		return nil, fmt.Errorf("%w: allocation %s", ErrNotHeld, s.owner.AllocationID)
	}
	return s, nil
}

// RemoveTaskFilesystems removes task storage this D allocated or
// recovered: the keeper first (a volume in use cannot go), by the ID
// captured at its create, or by name only when all three owner labels
// match; then each volume, only when its labels match. Once everything is
// gone the storage is no longer held; a failure keeps it held, so that a
// retry, or recovery after a restart, can finish. It is never cancelled:
// each call is bounded by CallTimeout, and failures are retried within the
// cleanup window. Storage already removed is removed again at no cost.
func (d *D) RemoveTaskFilesystems(fs dadapter.TaskFilesystems, done func(error)) {
	go func() {
		if err := d.removeStorage(fs); err != nil {
			done(fmt.Errorf("docker: remove task storage: %w", err))
			return
		}
		done(nil)
	}()
}

func (d *D) removeStorage(fs dadapter.TaskFilesystems) error {
	s, ok := fs.(*storage)
	if !ok || s == nil {
		return fmt.Errorf("%w: not the Docker adapter's task storage", ErrNotHeld)
	}
	d.mu.Lock()
	other := d.held[s.owner.AllocationID]
	d.mu.Unlock()
	if other != nil && other != s {
		return fmt.Errorf("%w: allocation %s is held by another handle", ErrNotHeld, s.owner.AllocationID)
	}
	if err := d.removeParts(s.owner, s.keeper); err != nil {
		return fmt.Errorf("allocation %s: %w", s.owner.AllocationID, err)
	}
	d.mu.Lock()
	if d.held[s.owner.AllocationID] == s {
		delete(d.held, s.owner.AllocationID)
	}
	d.mu.Unlock()
	return nil
}

// removeParts removes an allocation's keeper (by keeperID when it came
// back from the create) and its two volumes, each found by the name the
// allocation gives it and removed only when its labels prove it is
// owner's. Something of the same name that is not owner's is left alone:
// it is not this allocation's to remove.
func (d *D) removeParts(owner dadapter.StorageOwner, keeperID string) error {
	c := &cleanup{opt: d.opt}
	var errs []error
	keeper := func(ctx context.Context) error {
		if keeperID != "" {
			_, err := d.cli.ContainerRemove(ctx, keeperID, client.ContainerRemoveOptions{Force: true})
			return gone(err)
		}
		return d.removeContainerNamed(ctx, objectName(KindKeeper, owner.AllocationID), owner)
	}
	if err := c.retry(keeper); err != nil {
		errs = append(errs, fmt.Errorf("keeper %s left behind: %w", objectName(KindKeeper, owner.AllocationID), err))
	}
	for _, k := range []Kind{KindWork, KindMeta} {
		name := objectName(k, owner.AllocationID)
		if err := c.retry(func(ctx context.Context) error { return d.removeVolume(ctx, name, owner, k) }); err != nil {
			errs = append(errs, fmt.Errorf("volume %s left behind: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// removeVolume removes the volume name if its labels say it is owner's
// part of kind k.
func (d *D) removeVolume(ctx context.Context, name string, owner dadapter.StorageOwner, k Kind) error {
	v, err := d.cli.VolumeInspect(ctx, name, client.VolumeInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !ownedPart(v.Volume.Labels, owner, k) {
		return nil
	}
	_, err = d.cli.VolumeRemove(ctx, name, client.VolumeRemoveOptions{})
	return gone(err)
}

// ownedPart reports whether labels make an object owner's part of kind k.
func ownedPart(labels map[string]string, owner dadapter.StorageOwner, k Kind) bool {
	return matches(labels, owner) && labels[LabelKind] == string(k)
}

// checkVolumes proves, before a container mounts them, that both volumes
// are still the storage's own: present, with its owner labels and kinds.
// A volume removed by hand and made again by someone else is refused.
func (d *D) checkVolumes(ctx context.Context, s *storage) error {
	for _, p := range []struct {
		name string
		kind Kind
	}{{s.work, KindWork}, {s.meta, KindMeta}} {
		if p.name == "" {
			return fmt.Errorf("task storage %s has no %s volume", s.owner.AllocationID, p.kind)
		}
		var v client.VolumeInspectResult
		err := d.call(ctx, func(ctx context.Context) (err error) {
			v, err = d.cli.VolumeInspect(ctx, p.name, client.VolumeInspectOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("inspect volume %s: %w", p.name, err)
		}
		if !ownedPart(v.Volume.Labels, s.owner, p.kind) {
			return fmt.Errorf("volume %s does not carry the labels of task storage %s", p.name, s.owner.AllocationID)
		}
	}
	return nil
}
