// Package gitrepo is the runner-owned repository (#87): a bare repository per
// configured user repository, at
// <runnerRoot>/<runnerOwner>/repositories/<hash>.git, that holds every commit
// codeboost makes, because codeboost never writes the user's repository.
// hash is the first 16 bytes, in lowercase hex, of the SHA-256 of the user
// repository's absolute, cleaned path.
//
// It owns that directory: base commits fetched from the user's repository by
// ID (no refs, tags or FETCH_HEAD), attempt commits taken in from bundles
// under refs/codeboost/attempts/<attemptID>, task clones made from it, and
// the diffs the review screen shows of runner commits.
//
// Every git call is the host's git, run through procgroup so that each call
// is its own abortable process group, in a fixed environment: no system or
// global configuration, no hooks, no prompts, no replace objects and the C
// locale, so that nothing of the user's setup can run code or change what a
// call means. The user's repository is only ever read (rev-parse, and
// upload-pack serving a fetch).
//
// It imports the standard library, dadapter, dadapter/procgroup and ids only;
// the runner reaches it through D and never imports it. It is Linux-only, as
// procgroup is.
package gitrepo
