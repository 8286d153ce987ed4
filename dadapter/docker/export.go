package docker

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/codeboost/codeboost/dadapter"
)

// The export's bounds ("Partial output").
const (
	// bigFileBytes is the size over which a changed file is named in a
	// notice instead of diffed, so that one large file cannot exhaust the
	// export's memory or its deadline.
	bigFileBytes = 8 << 20
	bigFileWords = "8 MiB"
)

// Exit statuses of the helper script beside 0 and a failure.
const (
	exitMetadataChanged = 10
	exitNoChanges       = 11
	exitTreeDirty       = 12 // the work tree is not a clean copy of the base (mode tree)
	exitOverLimit       = 13 // the changes are over CB_COMMIT_LIMIT (commit); their size on stdout
)

// ErrMetadataChanged refuses an export or a commit of task storage whose
// metadata is not what the allocation seeded (its baseline): nothing the
// agent can do makes it so, since the agent sees the metadata read-only,
// so the storage has been tampered with, and git must not read it.
var ErrMetadataChanged = errors.New("the task storage's metadata changed since it was seeded")

// ExportTaskDiff is "Partial output": at most maxBytes (1 MiB at most) of
// the raw diff from the storage's base to its work tree, edits and new
// untracked files included, with codeboost: notice lines first naming what
// it leaves out (see helperScript). git runs in a helper container with
// both volumes read-only, as the agent's user, with no network, no
// capabilities and a read-only root; its temporary index lives in the
// container's /tmp, so the export writes nothing to task storage. The
// metadata is checked against the baseline before git reads it. The output
// is cut inside the container one byte past maxBytes, so the Docker work
// stops at the limit; a cut diff is its first maxBytes bytes, Truncated.
// The line saying it was cut is F's to add when it saves the diff
// (runner/diagnostics.go), so that D's bytes stay a prefix of the whole
// diff (the conformance suite's "partial-output-bounded").
//
// ctx carries F's deadline: at an abort or the deadline the container is
// removed before done, which then gets ctx's error (joined with the
// removal's, if it failed). A git failure's error ends with git's last two
// lines of standard error.
func (d *D) ExportTaskDiff(ctx context.Context, fs dadapter.TaskFilesystems, maxBytes int, done func(dadapter.ExportResult, error)) {
	go func() {
		r, err := d.export(ctx, fs, maxBytes)
		if err != nil {
			done(dadapter.ExportResult{}, fmt.Errorf("docker: export: %w", err))
			return
		}
		done(r, nil)
	}()
}

func (d *D) export(ctx context.Context, fs dadapter.TaskFilesystems, maxBytes int) (dadapter.ExportResult, error) {
	if maxBytes < 0 || maxBytes > DefaultExportMaxBytes {
		return dadapter.ExportResult{}, fmt.Errorf("maxBytes %d is not within 0 and %d", maxBytes, DefaultExportMaxBytes)
	}
	s, err := d.readable(ctx, fs)
	if err != nil {
		return dadapter.ExportResult{}, err
	}
	out, err := d.runHelper(ctx, s, helperRun{
		kind: KindExport,
		env: append(s.scriptEnv(maxBytes+1),
			"CB_BIG="+strconv.Itoa(bigFileBytes), "CB_BIG_TEXT="+bigFileWords),
		args:        []string{"export"},
		stdoutLimit: maxBytes + 1,
	})
	if err != nil {
		return dadapter.ExportResult{}, fmt.Errorf("task storage %s: %w", s.owner.AllocationID, err)
	}
	if err := scriptFailure(s, out); err != nil {
		return dadapter.ExportResult{}, err
	}
	r := dadapter.ExportResult{Diff: out.stdout}
	if len(r.Diff) > maxBytes || out.overflow {
		r.Diff, r.Truncated = r.Diff[:maxBytes], true
	}
	return r, nil
}

// readable returns fs as held storage that a helper container can read:
// both volumes still its own, and the base and baseline a check needs (a
// recovery handle whose keeper was lost has neither).
func (d *D) readable(ctx context.Context, fs dadapter.TaskFilesystems) (*storage, error) {
	s, err := d.heldStorage(fs)
	if err != nil {
		return nil, err
	}
	if !isCommitID(s.base) || s.baseline == "" {
		return nil, fmt.Errorf("task storage %s has no recorded base and baseline", s.owner.AllocationID)
	}
	if err := d.checkVolumes(ctx, s); err != nil {
		return nil, stopped(ctx, err)
	}
	return s, nil
}

// scriptEnv is what every run of the helper script is told about s, with
// limit the bytes it may write to standard output.
func (s *storage) scriptEnv(limit int) []string {
	return []string{"CB_BASE=" + s.base, "CB_BASELINE=" + s.baseline, "CB_LIMIT=" + strconv.Itoa(limit)}
}

// scriptFailure turns the helper script's exit status into an error.
func scriptFailure(s *storage, out helperOutput) error {
	switch out.exitCode {
	case 0:
		return nil
	case exitMetadataChanged:
		return fmt.Errorf("task storage %s: %w (baseline %s)", s.owner.AllocationID, ErrMetadataChanged, s.baseline)
	case exitNoChanges:
		return fmt.Errorf("task storage %s: %w", s.owner.AllocationID, ErrNoChanges)
	}
	return fmt.Errorf("task storage %s: exit status %d: %s", s.owner.AllocationID, out.exitCode, lastLines(out.stderr, 3))
}

// helperScript is the export, inspect, tree and commit containers'
// program, in busybox sh with git. It is kept in one piece because the four
// runs share its steps (the baseline check, the staging, the lists of what
// git skips), and callbacks run it again through xargs (modes below
// "commit"), which keeps paths with any byte but NUL intact: every list of
// paths it keeps is NUL-separated.
//
// Notices (export), one "codeboost: " line per path, at most 200, before
// the diff: a changed file over 8 MiB (either side; a tracked one keeps the
// base's version, so its bytes are never read); an untracked nested
// repository; an untracked path git will not add (a part git takes for
// .git, a symlink named .gitmodules); an entry named .git (any case; a
// nested repository's own .git too); a fifo or socket; an ignored path
// (ignored directories collapsed); a non-empty submodule directory; and a
// changed file whose ident or working-tree-encoding attribute is set.
//
// The commit takes what the export shows, and nothing of what it names
// but the files over 8 MiB, which it takes whole: nested repositories,
// refused paths, .git entries, fifos and sockets, ignored paths and
// submodule contents are not in a commit either.
//
// The inspection (inspect.go) lists the paths a commit would take (files
// over 8 MiB too) and, apart, those the export names but for the attribute
// notices, as records Go reads (parseManifest). The tree check (tree.go)
// runs the same inspection: a clean copy of the base is a work tree whose
// manifest is empty.
const helperScript = `# The helper script of the export, inspect, tree and commit containers
# (busybox sh and git, in the helper image). It is run as: sh -c 'eval
# "$CB_SCRIPT"' codeboost MODE [ARGS], with the task storage mounted
# read-only (the work tree at /task, the metadata at /task/.git) and a tmpfs
# /tmp, the only place it writes.
#
# Environment: CB_BASE (the commit the storage was seeded from),
# CB_BASELINE (the metadata baseline recorded at allocation), CB_LIMIT (the
# bytes it may write to stdout; one more than the caller keeps tells a cut);
# for export CB_BIG and CB_BIG_TEXT (a path over this many bytes is named,
# in these words, instead of diffed); for commit GIT_AUTHOR_*,
# GIT_COMMITTER_* and CB_MESSAGE, and CB_COMMIT_LIMIT (the bytes the
# changed and new files may hold together).
#
# Exit status: 0 done, 10 the metadata changed since allocation, 11 (commit)
# the work tree is the base's, 12 (tree) the work tree is not the base's,
# 13 (commit) the changes are over CB_COMMIT_LIMIT (their size on stdout),
# anything else a failure whose reason is on stderr (codeboost's line, then
# git's last two).

set -u
set -o pipefail
# git reads no configuration but the metadata's (checked first) and these,
# given as on its command line so that they win: no hook, no fsmonitor or
# other program runs, nothing is written beside what is asked, and the
# root-owned metadata is safe to read as the agent's user.
export LC_ALL=C HOME=/tmp GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_ATTR_NOSYSTEM=1 \
	GIT_NO_REPLACE_OBJECTS=1 GIT_TERMINAL_PROMPT=0 GIT_OPTIONAL_LOCKS=0 \
	GIT_CONFIG_COUNT=6 \
	GIT_CONFIG_KEY_0=core.hooksPath GIT_CONFIG_VALUE_0=/dev/null \
	GIT_CONFIG_KEY_1=core.fsmonitor GIT_CONFIG_VALUE_1=false \
	GIT_CONFIG_KEY_2=gc.auto GIT_CONFIG_VALUE_2=0 \
	GIT_CONFIG_KEY_3=core.untrackedCache GIT_CONFIG_VALUE_3=false \
	GIT_CONFIG_KEY_4=core.splitIndex GIT_CONFIG_VALUE_4=false \
	GIT_CONFIG_KEY_5=safe.directory GIT_CONFIG_VALUE_5="*"

empty_blob=e69de29bb2d1d6434b8b29ae775ad8c2e48c5391

die() {
	echo "codeboost: $1" >&2
	[ -s /tmp/err ] && tail -n 2 /tmp/err >&2
	exit 1
}

# g runs git, keeping its complaints for die.
g() {
	git "$@" 2>>/tmp/err || die "git $1 failed"
}

# check_baseline refuses metadata that is not what allocation seeded: the
# digest over every regular file (sha256sum lines, sorted), and nothing
# but regular files and directories. The metadata decides what git runs
# and reads (config, objects, refs), so nothing else runs before it.
check_baseline() {
	cd /task/.git || die "no metadata at /task/.git"
	odd=$(find . ! -type f ! -type d) || die "cannot read the metadata"
	sum=$(find . -type f -exec sha256sum {} + | sort | sha256sum) || die "cannot read the metadata"
	cd /
	if [ -n "$odd" ] || [ "sha256:${sum%% *}" != "$CB_BASELINE" ]; then
		echo "codeboost: the task storage's metadata changed since it was seeded" >&2
		exit 10
	fi
}

# stage makes a temporary index of the work tree over the base: edits,
# deletions, and untracked files that are not ignored as intent-to-add
# entries, which cost no read of the file. What git cannot take (an
# untracked nested repository, a path git refuses) is listed under /tmp/n
# instead, and with a size limit ($1 > 0) so is a changed file over it,
# which is then never read (a tracked one keeps the base's version, an
# untracked one is dropped). Nothing is written outside /tmp.
stage() {
	export GIT_DIR=/task/.git GIT_WORK_TREE=/task GIT_INDEX_FILE=/tmp/index \
		GIT_OBJECT_DIRECTORY=/tmp/objects GIT_ALTERNATE_OBJECT_DIRECTORIES=/task/.git/objects
	mkdir -p /tmp/objects /tmp/n || die "cannot write /tmp"
	: >/tmp/drop
	cd /task || die "no work tree at /task"
	g read-tree "$CB_BASE"
	if [ "$1" -gt 0 ]; then
		find . -iname .git -prune -o -type f -size +"$1"c -print0 >/tmp/big || die "cannot read the work tree"
		g ls-tree -r -z -l "$CB_BASE" >/tmp/tree
		xargs -0 -r sh -c 'eval "$CB_SCRIPT"' codeboost big-in-base "$1" </tmp/tree >>/tmp/big || die "cannot list the base's large files"
		sort -z -u /tmp/big | xargs -0 -r sh -c 'eval "$CB_SCRIPT"' codeboost big || die "cannot set large files aside"
	fi
	g ls-files -z --others --exclude-standard >/tmp/untracked
	xargs -0 -r sh -c 'eval "$CB_SCRIPT"' codeboost untracked </tmp/untracked || die "cannot sort the untracked files"
	# --ignore-errors: the paths git refuses are named already; an
	# intent-to-add reads no file, so nothing else can fail here.
	git add --intent-to-add --ignore-errors -- . 2>>/tmp/err.add
	case $? in 0 | 1) ;; *) cat /tmp/err.add >>/tmp/err && die "git add failed" ;; esac
	g update-index --force-remove -z --stdin </tmp/drop
}

# big_in_base names the base's blobs over $1 bytes (from ls-tree -l -z).
big_in_base() {
	limit=$1
	shift
	for r; do
		meta=${r%%	*}
		size=${meta##* }
		case "$size" in -) continue ;; esac
		[ "$size" -gt "$limit" ] && printf './%s\0' "${r#*	}"
	done
	return 0
}

# big sets aside each path over the limit: a tracked one keeps the base's
# version (skip-worktree), an untracked one git would list is dropped from
# the index after staging. A path that is not the base's is named.
big() {
	for p; do
		p=${p#./}
		if ! git update-index --skip-worktree -- "$p" 2>/dev/null; then
			listed=$(git ls-files -z --others --exclude-standard -- ":(literal)$p" | tr '\0' '/')
			[ "$listed" = "$p/" ] || continue # ignored, or inside a nested repository: never staged
			printf '%s\0' "$p" >>/tmp/drop
		fi
		old=$(git rev-parse -q --verify "$CB_BASE:$p" 2>/dev/null)
		new=
		if [ -f "$p" ] && [ ! -L "$p" ]; then
			new=$(git -c core.bigFileThreshold=1m hash-object -- "$p" 2>>/tmp/err) || die "cannot read $p"
		fi
		[ "$old" = "$new" ] || printf '%s\0' "$p" >>/tmp/n/big
	done
	return 0
}

# untracked names what git lists as untracked but cannot take: a nested
# repository (listed as "dir/"; dropped if git adds it as a gitlink) and a
# path git refuses to add. Only a path with a part that git might take for
# .git (any case, NTFS short names) is tried against git's own rules.
untracked() {
	for p; do
		case "$p" in
		*/)
			printf '%s\0' "${p%/}" >>/tmp/n/nested
			printf '%s\0' "${p%/}" >>/tmp/drop
			continue
			;;
		[.][gG][iI][tT]* | */[.][gG][iI][tT]* | *[gG][iI][tT]~* | *[gG][iI][tT][mM][oO][dD]~*)
			mode=100644
			[ -L "$p" ] && mode=120000
			rm -f /tmp/probe
			if ! GIT_INDEX_FILE=/tmp/probe git update-index --add --cacheinfo "$mode,$empty_blob,$p" 2>/dev/null; then
				printf '%s\0' "$p" >>/tmp/n/refused
				continue
			fi
			;;
		esac
	done
	return 0
}

# gitlinks names the submodule directories that are not empty: git shows
# nothing of what is in them.
gitlinks() {
	for r; do
		case "$r" in 160000*) ;; *) continue ;; esac
		p=${r#*	}
		[ -d "./$p" ] && [ -n "$(ls -A "./$p")" ] && printf '%s\0' "$p"
	done
	return 0
}

# attributes names the changed files whose ident or working-tree-encoding
# attribute is set: the diff shows them as git stores them, not as the
# work tree has them.
attributes() {
	for p; do
		for a in ident working-tree-encoding; do
			v=$(git check-attr -z "$a" -- "$p" | tr '\0' '\n' | tail -n 1)
			case "$v" in unspecified | unset) ;; *)
				printf '%s\0' "$p"
				break
				;;
			esac
		done
	done
	return 0
}

# find_notices lists, under /tmp/n, what git skips without a word.
find_notices() {
	cd /task || die "no work tree at /task"
	find . -path ./.git -prune -o -iname .git -print0 -prune >/tmp/n/dotgit || die "cannot read the work tree"
	find . -path ./.git -prune -o \( -type p -o -type s \) -print0 >/tmp/n/special || die "cannot read the work tree"
	g ls-files -z --others --ignored --exclude-standard --directory >/tmp/n/ignored
	g ls-files -z --stage >/tmp/stage
	xargs -0 -r sh -c 'eval "$CB_SCRIPT"' codeboost gitlinks </tmp/stage >/tmp/n/submodule || die "cannot read the submodules"
}

# find_attributes lists under /tmp/n/attributes the changed files whose
# diff is not the work tree's bytes (see attributes).
find_attributes() {
	: >/tmp/n/attributes
	{
		cat /task/.git/info/attributes
		find . -path ./.git -prune -o -name .gitattributes -type f -print0 | xargs -0 -r cat
	} >/tmp/attributes 2>/dev/null
	if grep -q -e ident -e working-tree-encoding /tmp/attributes; then
		g diff --name-only --no-renames -z "$CB_BASE" >/tmp/changed
		xargs -0 -r sh -c 'eval "$CB_SCRIPT"' codeboost attributes </tmp/changed >/tmp/n/attributes || die "cannot read attributes"
	fi
}

# notice writes one line per path of the list $1, saying $2 (find's
# paths lose their "./"; a newline in a path shows as "?").
notice() {
	[ -s "/tmp/n/$1" ] || return 0
	tr '\n\0' '?\n' <"/tmp/n/$1" | sed "s|^\./||; s|^|codeboost: not diffed, $2: |"
}

# notices are the lines that name what the diff leaves out, at most 200.
notices() {
	{
		notice big "a changed file over $CB_BIG_TEXT"
		notice nested "an untracked nested repository"
		notice refused "an untracked path Git will not add"
		notice dotgit "an entry named .git"
		notice special "a fifo or socket"
		notice ignored "an ignored path"
		notice submodule "a path in a submodule directory"
	} >/tmp/notices
	notice attributes "shown as Git stores it (ident or working-tree-encoding)" | sed 's|not diffed, ||' >>/tmp/notices
	n=$(wc -l </tmp/notices)
	head -n 200 /tmp/notices
	[ "$n" -gt 200 ] && echo "codeboost: $((n - 200)) more notices left out"
	return 0
}

# bounded runs "$@" after $1, its name, writing at most CB_LIMIT bytes of
# its output: a cut stops it (SIGPIPE), so the work stops at the limit too.
bounded() {
	what=$1
	shift
	{
		"$@" 2>>/tmp/err
		echo $? >/tmp/status
	} | head -c "$CB_LIMIT"
	case "$(cat /tmp/status)" in 0 | 141) ;; *) die "$what failed" ;; esac
}

export_diff() {
	check_baseline
	stage "$CB_BIG"
	find_notices
	find_attributes
	notices >/tmp/head
	bounded "git diff" sh -c 'cat /tmp/head && exec git diff --binary --no-color --no-ext-diff --no-textconv --no-renames "$CB_BASE" --'
}

# tag writes a record "$1\0PATH\0" for each path, without find's "./"
# and without the "/" git ends a directory with.
tag() {
	t=$1
	shift
	for p; do
		p=${p#./}
		printf '%s\0%s\0' "$t" "${p%/}"
	done
	return 0
}

# links writes "link\0PATH\0TARGET\0" for each path that is a symbolic
# link, its target byte for byte (readlink -n adds no newline, and "./"
# keeps a path that starts with "-" from reading as an option).
links() {
	for p; do
		[ -L "./$p" ] || continue
		printf 'link\0%s\0' "$p"
		readlink -n "./$p" || die "cannot read the link $p"
		printf '\0'
	done
	return 0
}

# inspect writes the change manifest (InspectTaskChanges) as records Go
# reads: git's own name-status records ("A\0PATH\0", M, D or T; -z quotes
# nothing) over the staging commit makes, so that a new file git would
# take is an added one; then the links among the added and changed paths;
# then one record per path of each list stage and find_notices made,
# tagged with the list's name (ignored, nested, submodule, dotgit, special,
# refused): words, so that no tag is one of git's status letters. A
# metadata change exits 10 first, as for export and commit; Go reads that
# as a manifest, not a failure.
inspect() {
	check_baseline
	manifest
	bounded "the manifest" cat /tmp/changes /tmp/links /tmp/lists
}

# manifest writes inspect's records to /tmp/changes (git's), /tmp/links
# and /tmp/lists (the lists git skips), over metadata already checked.
manifest() {
	stage 0
	find_notices
	# One read of every file records its state in the index, so that the
	# two diffs compare file status only; a refresh that fails costs them
	# that read again, nothing else.
	git update-index -q --refresh >/dev/null 2>&1
	g diff --name-status -z --no-renames "$CB_BASE" -- >/tmp/changes
	g diff --name-only -z --no-renames --diff-filter=AMT "$CB_BASE" -- >/tmp/changed
	xargs -0 -r sh -c 'eval "$CB_SCRIPT"' codeboost links </tmp/changed >/tmp/links || die "cannot read the links"
	: >/tmp/lists
	for l in ignored nested submodule dotgit special refused; do
		[ -s "/tmp/n/$l" ] || continue
		xargs -0 -r sh -c 'eval "$CB_SCRIPT"' codeboost tag "$l" <"/tmp/n/$l" >>/tmp/lists || die "cannot list the paths git skips"
	done
}

# tree is CheckTaskTree's proof (tree.go). A work tree that is a clean
# copy of the base has an empty change manifest: nothing changed, added,
# ignored, nested, special or named .git, and every submodule directory
# there and empty (a missing one is a deletion). If it is not, it writes
# the manifest's records, as inspect does, and exits 12; else the base's
# whole tree as git ls-tree -r -z --full-tree writes it ("MODE TYPE
# OBJECT<tab>PATH\0", -z quoting nothing), against which Go fits the
# operations and takes the gitlinks.
tree() {
	check_baseline
	manifest
	if [ -s /tmp/changes ] || [ -s /tmp/lists ]; then
		bounded "the manifest" cat /tmp/changes /tmp/links /tmp/lists
		exit 12
	fi
	bounded "git ls-tree" git ls-tree -r -z --full-tree "$CB_BASE"
}

# sizes writes the bytes of the paths given, together: a regular file's
# from its inode (no byte of it is read), a link's target's length.
sizes() {
	t=0
	for p; do
		if [ -L "./$p" ]; then
			n=$(readlink -n "./$p" | wc -c) || die "cannot read the link $p"
		elif [ -f "./$p" ]; then
			n=$(stat -c %s "./$p") || die "cannot measure $p"
		else
			continue
		fi
		t=$((t + n))
	done
	echo "$t"
}

# within_limit refuses, before git reads any of them, changes whose added
# and changed files are over CB_COMMIT_LIMIT bytes together: exit 13, the
# total on stdout. The paths are the ones the staged index would commit.
within_limit() {
	g diff --name-only -z --no-renames --diff-filter=AMT "$CB_BASE" -- >/tmp/changed
	xargs -0 -r sh -c 'eval "$CB_SCRIPT"' codeboost sizes </tmp/changed >/tmp/sizes || die "cannot measure the changes"
	total=0
	while read -r n; do total=$((total + n)); done </tmp/sizes
	if [ "$total" -gt "$CB_COMMIT_LIMIT" ]; then
		echo "$total"
		exit 13
	fi
}

commit() {
	check_baseline
	stage 0
	within_limit
	g add -u # the edits, and the blobs of the intent-to-add entries
	tree=$(g write-tree) || exit 1
	base_tree=$(g rev-parse "$CB_BASE^{tree}") || exit 1
	[ "$tree" = "$base_tree" ] && exit 11
	c=$(g commit-tree "$tree" -p "$CB_BASE" -m "$CB_MESSAGE") || exit 1
	# The bundle's one ref lives in a scratch repository: the metadata is
	# read-only, and its refs are not the bundle's business.
	unset GIT_WORK_TREE GIT_INDEX_FILE
	export GIT_DIR=/tmp/bundle.git
	g init -q --bare
	g update-ref refs/heads/codeboost "$c"
	bounded "git bundle" git bundle create -q - "$CB_BASE..refs/heads/codeboost"
}

case "${1:-}" in
export) export_diff ;;
inspect) inspect ;;
tree) tree ;;
commit) commit ;;
big-in-base) shift && big_in_base "$@" ;;
big) shift && big "$@" ;;
untracked) shift && untracked "$@" ;;
gitlinks) shift && gitlinks "$@" ;;
attributes) shift && attributes "$@" ;;
sizes) shift && sizes "$@" ;;
tag) shift && tag "$@" ;;
links) shift && links "$@" ;;
*) die "unknown mode ${1:-}" ;;
esac
`
