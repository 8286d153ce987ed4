package store

// schemaVersion is the user_version this build writes. Version 6 is the
// contract's "Proposed storage additions" (v5 → v6); earlier versions belong to
// the review screen that preceded the runner and are migrated in issue 3.
// Version 7 keeps each plan item's spec, its canonical JSON from a plan
// document (docs/plan-format.md), beside its title: plan_items.spec, NULL for
// an item known by its title alone (v6 rows, ImportRevision). v6 → v7 is
// migrateV6. Version 8 is the contract's schema v13 ("Safety findings and
// partial output", and "Start and resume": "schema v13 persists the
// evidence and an explicit owed marker"): tasks.owed_finding and
// tasks.owed_attempt hold a safety finding owed at a human gate, whose
// save with its attempt's terminal write failed. The contract's v9
// (attempts.metadata_baseline, attempts.storage_base) is in v6 already;
// Version 9 is the contract's v14 ("Scope continuation (#88)": "v14 binds
// continuation approvals to snapshots"): the checkpoints table, one row per
// runner commit that recorded a scope finding, with the leaf entries of its
// tree, and continuation_approvals, each bound to a revision, a snapshot
// and the completed prefix it continues after (its last item and head)
// (snapshot_id NOT NULL: no build before v9 stored a continuation approval,
// so no unbound legacy approval can exist to admit execution). The
// contract's v11 and v15 belong to the planning requests table, built with
// the suggestion coordinator; its v12's stamped choices are v6's
// choices.review_version. v6 → v9 is migrateV6, v7 → v9 migrateV7, v8 → v9
// migrateV8 (new tables only, which every migration adds from schema).
// Version 10 adds the neighbouring lanes' tables (issue 11): questions,
// one row per Ask question (its note, its read-only question attempt's
// state and answer), and plan_requests, the suggestion coordinator's
// requests: the contract's v11 (mode: suggestion or draft) and v15 (each
// request bound to the checkpoint, the audited head and the completed
// prefix it was captured at) columns; and the merge coordinator's columns
// of merge_attempts (the pull request and head it merges, the review
// version it was admitted at, the user action whose saved response its
// outcome updates, its reason, and requiresFreshReview). v9 → v10 is
// migrateV9 (addMergeColumns, then the new tables). Version 11 adds
// tasks.run_review_version (issue 19): the review version a plan run was
// admitted against, set by the transaction that admits a run's first item
// and cleared when the run finishes. A run lives only in memory; this one
// durable fact is what lets startup recovery tell a run that a crash or a
// shutdown cut between two items (go on, against that same version) from a
// task at rest, and lets I3's requeue apply the very check the run's next
// item would have met. v10 → v11 is migrateV10 (taskColumns, which every
// migration adds).
const schemaVersion = 11

// schema is the whole v11 schema. Times are Unix milliseconds from the injected
// clock, so that simulated runs are repeatable.
const schema = `
CREATE TABLE plans (
	key            TEXT PRIMARY KEY,
	repository_id  TEXT NOT NULL,
	task_id        TEXT NOT NULL,
	plan_id        TEXT NOT NULL,
	revision       INTEGER NOT NULL,
	snapshot_id    TEXT NOT NULL,
	review_version INTEGER NOT NULL DEFAULT 0,
	UNIQUE (repository_id, task_id, plan_id)
);
CREATE TABLE plan_items (
	plan_key  TEXT NOT NULL REFERENCES plans(key),
	revision  INTEGER NOT NULL,
	item      INTEGER NOT NULL,
	title     TEXT NOT NULL,
	run_again INTEGER NOT NULL DEFAULT 0,
	spec      TEXT,
	PRIMARY KEY (plan_key, revision, item)
);
CREATE TABLE notes (
	plan_key   TEXT NOT NULL REFERENCES plans(key),
	id         INTEGER NOT NULL,
	revision   INTEGER NOT NULL,
	item       INTEGER,
	text       TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (plan_key, id)
);
CREATE TABLE choices (
	plan_key       TEXT NOT NULL REFERENCES plans(key),
	choice_key     TEXT NOT NULL,
	value          TEXT NOT NULL,
	event_id       INTEGER,
	review_version INTEGER NOT NULL,
	PRIMARY KEY (plan_key, choice_key)
);
CREATE TABLE approvals (
	plan_key       TEXT NOT NULL REFERENCES plans(key),
	revision       INTEGER NOT NULL,
	item           INTEGER NOT NULL,
	snapshot_id    TEXT NOT NULL,
	review_version INTEGER NOT NULL,
	created_at     INTEGER NOT NULL,
	PRIMARY KEY (plan_key, revision, item, snapshot_id)
);
CREATE TABLE findings (
	plan_key   TEXT NOT NULL REFERENCES plans(key),
	finding_id TEXT NOT NULL,
	text       TEXT NOT NULL,
	status     TEXT NOT NULL DEFAULT 'open',
	PRIMARY KEY (plan_key, finding_id)
);
CREATE TABLE history (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	plan_key   TEXT NOT NULL REFERENCES plans(key),
	attempt_id TEXT,
	commit_sha TEXT NOT NULL,
	created_at INTEGER NOT NULL
);
CREATE TABLE tasks (
	plan_key             TEXT PRIMARY KEY REFERENCES plans(key),
	status               TEXT NOT NULL,
	requeue_pending      INTEGER NOT NULL DEFAULT 0,
	rebase_in_progress   TEXT,
	budget_deadline      INTEGER,
	cancel_requested     TEXT,
	state_version        INTEGER NOT NULL DEFAULT 0,
	context_generation   INTEGER NOT NULL DEFAULT 0,
	assignment_id        TEXT NOT NULL DEFAULT 'unassigned',
	referenced_code_hash TEXT NOT NULL DEFAULT 'none',
	current_attempt_id   TEXT,
	created_at           INTEGER NOT NULL,
	updated_at           INTEGER NOT NULL,
	owed_finding         TEXT,
	owed_attempt         TEXT,
	run_review_version   INTEGER,
	FOREIGN KEY (plan_key, current_attempt_id) REFERENCES attempts(plan_key, id) DEFERRABLE INITIALLY DEFERRED
);
CREATE TABLE attempts (
	id                     TEXT PRIMARY KEY,
	plan_key               TEXT NOT NULL REFERENCES tasks(plan_key),
	kind                   TEXT NOT NULL,
	phase                  TEXT NOT NULL,
	item                   INTEGER,
	state                  TEXT NOT NULL,
	context                TEXT NOT NULL,
	deadline               INTEGER NOT NULL,
	first_reason           TEXT,
	stale_cause            TEXT,
	stop_reason            TEXT,
	exit_code              INTEGER,
	signal                 TEXT,
	result                 BLOB,
	diagnostic             TEXT,
	diagnostic_ref         TEXT,
	safety_finding         TEXT,
	unreleased             TEXT,
	preparation_pgid       INTEGER,
	preparation_started_at INTEGER,
	preparation_identity   TEXT,
	allocation_id          TEXT,
	metadata_baseline      TEXT,
	storage_base           TEXT,
	created_at             INTEGER NOT NULL,
	started_at             INTEGER,
	settled_at             INTEGER,
	UNIQUE (plan_key, id)
);
CREATE INDEX attempts_by_task ON attempts(plan_key, created_at);
CREATE INDEX attempts_active ON attempts(plan_key) WHERE state IN ('pending','running');
CREATE TABLE user_actions (
	plan_key     TEXT NOT NULL,
	action_id    TEXT NOT NULL,
	kind         TEXT NOT NULL,
	request_hash TEXT NOT NULL,
	response     TEXT NOT NULL,
	created_at   INTEGER NOT NULL,
	PRIMARY KEY (plan_key, action_id)
);
CREATE TABLE feedback_events (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	plan_key      TEXT NOT NULL,
	action_id     TEXT NOT NULL,
	plan_revision INTEGER NOT NULL,
	snapshot_id   TEXT NOT NULL,
	item          INTEGER,
	kind          TEXT NOT NULL,
	text          TEXT,
	source_ref    TEXT NOT NULL,
	supersedes    INTEGER REFERENCES feedback_events(id),
	created_at    INTEGER NOT NULL,
	UNIQUE (plan_key, kind, action_id)
);
CREATE TRIGGER feedback_events_append_only_update BEFORE UPDATE ON feedback_events
BEGIN SELECT RAISE(ABORT, 'feedback events are append-only'); END;
CREATE TRIGGER feedback_events_append_only_delete BEFORE DELETE ON feedback_events
BEGIN SELECT RAISE(ABORT, 'feedback events are append-only'); END;
CREATE TABLE merge_attempts (
	id         TEXT PRIMARY KEY,
	plan_key   TEXT NOT NULL REFERENCES tasks(plan_key),
	state      TEXT NOT NULL CHECK (state IN ('submitting','queued','merged','removed','failed')),
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	pr_repo    TEXT,
	pr_number  INTEGER,
	head_sha   TEXT,
	review_version INTEGER,
	action_id  TEXT,
	reason     TEXT,
	requires_fresh_review INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX merge_attempts_by_task ON merge_attempts(plan_key, created_at);
CREATE TABLE checkpoints (
	attempt_id  TEXT PRIMARY KEY,
	plan_key    TEXT NOT NULL REFERENCES tasks(plan_key),
	revision    INTEGER NOT NULL,
	item        INTEGER NOT NULL,
	commit_sha  TEXT NOT NULL,
	scope_paths TEXT NOT NULL,
	leaves      TEXT,
	created_at  INTEGER NOT NULL
);
CREATE INDEX checkpoints_by_task ON checkpoints(plan_key, created_at);
CREATE TABLE continuation_approvals (
	plan_key       TEXT NOT NULL REFERENCES tasks(plan_key),
	checkpoint     TEXT NOT NULL REFERENCES checkpoints(attempt_id),
	revision       INTEGER NOT NULL,
	snapshot_id    TEXT NOT NULL,
	review_version INTEGER NOT NULL,
	prefix_item    INTEGER NOT NULL,
	head_attempt   TEXT NOT NULL,
	head_commit    TEXT NOT NULL,
	created_at     INTEGER NOT NULL,
	PRIMARY KEY (plan_key, checkpoint, revision, snapshot_id)
);
CREATE TABLE questions (
	id            TEXT PRIMARY KEY,
	plan_key      TEXT NOT NULL REFERENCES tasks(plan_key),
	note_id       INTEGER NOT NULL,
	state         TEXT NOT NULL CHECK (state IN ('pending','running','completed','failed')),
	answer        TEXT,
	reason        TEXT,
	retryable     INTEGER NOT NULL DEFAULT 0,
	allocation_id TEXT NOT NULL,
	created_at    INTEGER NOT NULL,
	updated_at    INTEGER NOT NULL
);
CREATE INDEX questions_by_task ON questions(plan_key, created_at);
CREATE TABLE plan_requests (
	id            TEXT PRIMARY KEY,
	plan_key      TEXT NOT NULL REFERENCES plans(key),
	mode          TEXT NOT NULL CHECK (mode IN ('suggestion','draft')),
	revision      INTEGER NOT NULL,
	snapshot_id   TEXT NOT NULL,
	state         TEXT NOT NULL CHECK (state IN ('pending','ready','consumed','failed','cancelled','invalidated')),
	reason        TEXT,
	cause         TEXT,
	reply         TEXT,
	checkpoint    TEXT,
	audited_head  TEXT,
	prefix_item   INTEGER,
	created_at    INTEGER NOT NULL,
	updated_at    INTEGER NOT NULL
);
CREATE INDEX plan_requests_by_plan ON plan_requests(plan_key, created_at);
CREATE TABLE app_settings (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
`
