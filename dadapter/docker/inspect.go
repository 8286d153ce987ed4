package docker

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/codeboost/codeboost/dadapter"
)

// maxManifestBytes bounds the manifest's records, which are held in memory
// while they are read: room for every list at MaxManifestPaths paths of
// some 350 bytes. A manifest past it is refused rather than cut at an
// arbitrary record, which would drop paths without a word.
const maxManifestBytes = 32 << 20

// InspectTaskChanges is inspectTaskChanges (#66): the change manifest of
// the storage's work tree against its base, for the runner's audit. It runs
// the helper script's own steps (helperScript, mode inspect) in a helper
// container locked down like the export's: the metadata is checked against
// the baseline first, and a change there is the manifest's answer
// (MetadataChanged, nothing else listed, no error), since git must not read
// it; then the work tree is staged as the commit stages it, so Changes is
// what a commit would hold, and the other lists are what the export's
// notices name but for the files over 8 MiB (a commit takes them) and the
// attributes (a commit takes those files as git stores them). Nothing is
// written to task storage.
//
// ctx aborts it as it aborts an export: the container is removed before
// done, which then gets ctx's error. An error is a refusal the audit counts
// as a finding; a manifest over maxManifestBytes is one.
func (d *D) InspectTaskChanges(ctx context.Context, fs dadapter.TaskFilesystems, done func(dadapter.ChangeManifest, error)) {
	go func() {
		m, err := d.inspect(ctx, fs, maxManifestBytes)
		if err != nil {
			done(dadapter.ChangeManifest{}, fmt.Errorf("docker: inspect: %w", err))
			return
		}
		done(m, nil)
	}()
}

// inspect is InspectTaskChanges with limit the manifest's bound in bytes.
func (d *D) inspect(ctx context.Context, fs dadapter.TaskFilesystems, limit int) (dadapter.ChangeManifest, error) {
	s, err := d.readable(ctx, fs)
	if err != nil {
		return dadapter.ChangeManifest{}, err
	}
	out, err := d.runHelper(ctx, s, helperRun{
		kind:        KindInspect,
		env:         s.scriptEnv(limit + 1),
		args:        []string{"inspect"},
		stdoutLimit: limit + 1,
	})
	if err != nil {
		return dadapter.ChangeManifest{}, fmt.Errorf("task storage %s: %w", s.owner.AllocationID, err)
	}
	if out.exitCode == exitMetadataChanged {
		return dadapter.ChangeManifest{MetadataChanged: true}, nil
	}
	if err := scriptFailure(s, out); err != nil {
		return dadapter.ChangeManifest{}, err
	}
	if out.overflow || len(out.stdout) > limit {
		return dadapter.ChangeManifest{}, fmt.Errorf("task storage %s: the change manifest is over %d bytes", s.owner.AllocationID, limit)
	}
	m, err := parseManifest(out.stdout)
	if err != nil {
		return dadapter.ChangeManifest{}, fmt.Errorf("task storage %s: %w", s.owner.AllocationID, err)
	}
	return m, nil
}

// changeKinds are git's name-status letters, as the script passes them on.
var changeKinds = map[string]dadapter.ChangeKind{
	"A": dadapter.ChangeAdded, "M": dadapter.ChangeModified, "D": dadapter.ChangeDeleted, "T": dadapter.ChangeTypeChanged,
}

// parseManifest reads the inspect script's records (see inspect in
// helperScript): NUL-terminated fields, a tag (git's status letter, or the
// name of a list) and a path each, and a link's target after its path. Anything else is refused, not skipped: a
// record the parser does not know could be a path the audit must see.
// Each list is sorted and cut at MaxManifestPaths.
func parseManifest(out []byte) (dadapter.ChangeManifest, error) {
	var m dadapter.ChangeManifest
	if len(out) == 0 {
		return m, nil
	}
	if out[len(out)-1] != 0 {
		return m, fmt.Errorf("the change manifest's last record is cut: %.60q", out[max(0, len(out)-60):])
	}
	fields := bytes.Split(out[:len(out)-1], []byte{0})
	lists := map[string]*[]string{
		"ignored": &m.Ignored, "nested": &m.Nested, "submodule": &m.GitlinkContent,
		"dotgit": &m.DotGit, "special": &m.Special, "refused": &m.Refused,
	}
	for i := 0; i < len(fields); {
		tag := string(fields[i])
		n := 2
		if tag == "link" {
			n = 3
		}
		if i+n > len(fields) || len(fields[i+1]) == 0 {
			return dadapter.ChangeManifest{}, fmt.Errorf("the change manifest's record %.20q has no path", tag)
		}
		path := string(fields[i+1])
		switch {
		case changeKinds[tag] != "":
			m.Changes = append(m.Changes, dadapter.Change{Path: path, Kind: changeKinds[tag]})
		case tag == "link":
			m.Symlinks = append(m.Symlinks, dadapter.Symlink{Path: path, Target: string(fields[i+2])})
		case lists[tag] != nil:
			*lists[tag] = append(*lists[tag], path)
		default:
			return dadapter.ChangeManifest{}, fmt.Errorf("the change manifest has a record %.20q the adapter does not know", tag)
		}
		i += n
	}
	m.Changes = sortCut(&m, m.Changes, func(a, b dadapter.Change) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Kind, b.Kind))
	})
	m.Symlinks = sortCut(&m, m.Symlinks, func(a, b dadapter.Symlink) int { return cmp.Compare(a.Path, b.Path) })
	for _, l := range lists {
		*l = sortCut(&m, *l, cmp.Compare[string])
	}
	return m, nil
}

// sortCut sorts a manifest's list and cuts it at MaxManifestPaths, saying
// so in m.Cut.
func sortCut[T any](m *dadapter.ChangeManifest, list []T, compare func(a, b T) int) []T {
	slices.SortFunc(list, compare)
	if len(list) > dadapter.MaxManifestPaths {
		m.Cut = true
		list = list[:dadapter.MaxManifestPaths]
	}
	return list
}
