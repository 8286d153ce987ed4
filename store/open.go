package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codeboost/codeboost/failpoints"
	"github.com/codeboost/codeboost/ids"
	_ "modernc.org/sqlite"
)

// Options configures a Store.
type Options struct {
	Now        func() time.Time // the injected clock; required
	IDs        ids.Source       // makes attempt IDs; required
	Failpoints *failpoints.Set  // nil in production
}

// Store is the only writer of codeboost's durable records.
type Store struct {
	db     *sql.DB // one connection: the single writer
	ctx    context.Context
	cancel context.CancelFunc
	now    func() time.Time
	ids    ids.Source
	fp     *failpoints.Set

	gateClosed atomic.Bool   // closed in shutdown step 3
	commits    atomic.Uint64 // transactions this Store committed (ChangeToken)

	stmtMu     sync.Mutex
	stmts      map[string]*sql.Stmt // prepared once per SQL text
	unprepared map[string]bool      // met inside a transaction, prepared after it
	capTaken   bool
}

// ErrShuttingDown is returned by every write after the write gate closed,
// unless the caller holds the shutdown capability.
var ErrShuttingDown = errors.New("the review server is shutting down")

// DSN is the modernc.org/sqlite data source name the Store opens path with:
// WAL, foreign keys, a busy timeout, and IMMEDIATE write transactions.
// Benchmarks use it too, so that their raw baseline runs on the same pragmas.
//
// The DSN is an SQLite URI (the driver opens a "file:" name with
// SQLITE_OPEN_URI), whose path SQLite percent-decodes and ends at "?" or
// "#": the path's "%", "?" and "#" are escaped, or a directory named "a#b"
// would open the file "a" with none of the pragmas.
func DSN(path string) string {
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	return "file:" + uriPath.Replace(path) + "?" + q.Encode()
}

var uriPath = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")

// Open opens (creating if needed) the database at path and migrates it.
func Open(path string, opt Options) (*Store, error) {
	if opt.Now == nil || opt.IDs == nil {
		return nil, errors.New("store: Options.Now and Options.IDs are required")
	}
	db, err := sql.Open("sqlite", DSN(path))
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	ctx, cancel := context.WithCancel(context.Background())
	s := &Store{db: db, ctx: ctx, cancel: cancel, now: opt.Now, ids: opt.IDs, fp: opt.Failpoints}
	if err := s.migrate(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) migrate() error {
	var v int
	if err := s.db.QueryRowContext(s.ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("store: read schema version: %w", err)
	}
	switch {
	case v == schemaVersion:
		if _, err := s.db.ExecContext(s.ctx, schemaIfMissing()); err != nil {
			return fmt.Errorf("store: complete the v%d schema: %w", schemaVersion, err)
		}
		return nil
	case v == 0:
		// A new database: the schema and its version in one transaction,
		// through the same statement path (and store/statement failpoint)
		// as every migration, so a failed statement leaves version 0 and no
		// table.
		tx, err := s.db.BeginTx(s.ctx, nil)
		if err != nil {
			return fmt.Errorf("store: create schema: %w", err)
		}
		defer tx.Rollback()
		t := &Tx{s: s, tx: tx}
		for _, q := range []string{schema, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)} {
			if err := t.execOnce(q); err != nil {
				return fmt.Errorf("store: create schema: %w", err)
			}
		}
		return tx.Commit()
	case v == 5:
		return s.migrateV5() // the review screen's database
	case v == 6:
		return s.migrateV6() // plan items without specs
	case v == 7:
		return s.migrateV7() // tasks without an owed finding
	case v == 8:
		return s.migrateV8() // no scope checkpoints
	case v == 9:
		return s.migrateV9() // no questions or planning requests
	case v == 10:
		return s.migrateV10() // no plan run's review version
	default:
		return fmt.Errorf("store: database schema version %d is not supported by this build (wants %d)", v, schemaVersion)
	}
}

// Close closes the database. Calls after Close fail.
func (s *Store) Close() error {
	s.stmtMu.Lock()
	for _, p := range s.stmts {
		p.Close()
	}
	s.stmts = nil
	s.stmtMu.Unlock()
	s.cancel()
	return s.db.Close()
}

// Capability is the shutdown capability: writes made with it pass the closed
// write gate. The server hands it only to coordinators' settlement and close
// code and to startup recovery; request handlers never receive it.
type Capability struct{ s *Store }

// ShutdownCapability returns the capability. It can be taken once, by the
// code that opened the store; a second call panics, so a handler cannot
// quietly obtain one.
func (s *Store) ShutdownCapability() Capability {
	if s.capTaken {
		panic("store: the shutdown capability was already taken")
	}
	s.capTaken = true
	return Capability{s: s}
}

// CloseWriteGate makes every later write fail with ErrShuttingDown unless it
// is made with the capability (shutdown step 3).
func (s *Store) CloseWriteGate() { s.gateClosed.Store(true) }

// Tx is one write transaction. Its methods are the durable rules.
type Tx struct {
	s     *Store
	tx    *sql.Tx
	after []func()
	local map[string]*sql.Stmt // statements prepared for this transaction only
}

// AfterCommit runs fn after COMMIT succeeds; it is dropped on rollback,
// including a failed COMMIT. On a nil Tx (outside any transaction) fn runs at
// once: a stop made by a timer, shutdown or the launch check applies at once.
func (t *Tx) AfterCommit(fn func()) {
	if t == nil {
		fn()
		return
	}
	t.after = append(t.after, fn)
}

// Update runs fn in one IMMEDIATE transaction, subject to the write gate.
func (s *Store) Update(fn func(*Tx) error) error {
	if s.gateClosed.Load() {
		return ErrShuttingDown
	}
	return s.update(fn)
}

// Update runs fn in one transaction that passes the closed write gate.
func (c Capability) Update(fn func(*Tx) error) error {
	if c.s == nil {
		return errors.New("store: zero Capability")
	}
	return c.s.update(fn)
}

func (s *Store) update(fn func(*Tx) error) (err error) {
	defer s.prepareSeen()
	sqlTx, err := s.db.BeginTx(s.ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	t := &Tx{s: s, tx: sqlTx}
	committed := false
	defer func() {
		if !committed {
			// Also when fn (or a hook inside it) panics: an open
			// transaction would hold the one connection for ever.
			sqlTx.Rollback()
		}
	}()
	if err = fn(t); err != nil {
		return err
	}
	s.fp.Hook("store/before-commit")
	if err = s.fp.Err("store/commit"); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	if err = sqlTx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	committed = true
	s.commits.Add(1)
	for _, f := range t.after {
		f()
	}
	return nil
}

// View runs fn in a read transaction; it never waits behind the gate.
func (s *Store) View(fn func(*Tx) error) error {
	if err := s.fp.Err("store/view"); err != nil {
		return fmt.Errorf("store: begin read: %w", err)
	}
	defer s.prepareSeen()
	sqlTx, err := s.db.BeginTx(s.ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("store: begin read: %w", err)
	}
	defer sqlTx.Rollback()
	return fn(&Tx{s: s, tx: sqlTx})
}

// stmt returns q prepared on the store's one connection and bound to this
// transaction, or nil the first time q is seen: preparing on the database
// needs the connection the transaction holds, so new statements are prepared
// right after the transaction ends (prepareSeen). Parsing dominated the cost
// of a transaction before this cache.
func (t *Tx) stmt(q string) *sql.Stmt {
	s := t.s
	s.stmtMu.Lock()
	p, ok := s.stmts[q]
	if !ok {
		if s.unprepared == nil {
			s.unprepared = map[string]bool{}
		}
		s.unprepared[q] = true
	}
	s.stmtMu.Unlock()
	if ok {
		return t.tx.StmtContext(s.ctx, p)
	}
	// Not prepared on the database yet: prepare it for this transaction,
	// so that a long transaction (recovery finalizes thousands of rows in
	// one) parses each statement once. It closes with the transaction.
	if lp, ok := t.local[q]; ok {
		return lp
	}
	lp, err := t.tx.PrepareContext(s.ctx, q)
	if err != nil {
		return nil // the caller runs q unprepared and reports its error
	}
	if t.local == nil {
		t.local = map[string]*sql.Stmt{}
	}
	t.local[q] = lp
	return lp
}

// prepareSeen prepares the statements the last transaction met for the
// first time; the connection is free again.
func (s *Store) prepareSeen() {
	s.stmtMu.Lock()
	var todo []string
	for q := range s.unprepared {
		todo = append(todo, q)
	}
	clear(s.unprepared)
	s.stmtMu.Unlock()
	// Prepare without holding stmtMu: preparing waits for the connection,
	// which another goroutine's transaction may hold while it looks up a
	// statement.
	for _, q := range todo {
		p, err := s.db.PrepareContext(s.ctx, q)
		if err != nil {
			continue
		}
		s.stmtMu.Lock()
		if s.stmts == nil {
			s.stmts = map[string]*sql.Stmt{}
		}
		if s.stmts[q] == nil {
			s.stmts[q], p = p, nil
		}
		s.stmtMu.Unlock()
		if p != nil {
			p.Close()
		}
	}
}

// statementFault is the store/statement failpoint, evaluated once for every
// statement a transaction runs (a nil Set in production: one nil check). It
// returns the storage error the statement fails with, or nil; afterFirstRow
// is true when the fault's value is "step": a query then returns its first
// row and fails at its next step, as a read error partway through a result
// does (exec and queryRow fail at once either way).
func (t *Tx) statementFault() (afterFirstRow bool, err error) {
	v, ok := t.s.fp.Eval("store/statement")
	if !ok {
		return false, nil
	}
	return v == "step", errors.New("store: statement failed: failpoint store/statement")
}

func (t *Tx) exec(q string, args ...any) (sql.Result, error) {
	if _, err := t.statementFault(); err != nil {
		return nil, err
	}
	if p := t.stmt(q); p != nil {
		return p.ExecContext(t.s.ctx, args...)
	}
	return t.tx.ExecContext(t.s.ctx, q, args...)
}

// row is queryRow's result: the *sql.Row of the statement, or the storage
// error the store/statement failpoint failed it with. database/sql cannot
// make a *sql.Row that carries a given error, so the fault is kept here and
// Scan returns it, as a failed statement's Scan would.
type row struct {
	r   *sql.Row
	err error // the injected fault; r is nil when it is set
}

// Scan is sql.Row's Scan.
func (r row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	return r.r.Scan(dest...)
}

func (t *Tx) queryRow(q string, args ...any) row {
	if _, err := t.statementFault(); err != nil {
		return row{err: err}
	}
	if p := t.stmt(q); p != nil {
		return row{r: p.QueryRowContext(t.s.ctx, args...)}
	}
	return row{r: t.tx.QueryRowContext(t.s.ctx, q, args...)}
}

// rows is query's result: the statement's *sql.Rows, which the
// store/statement failpoint (value "step") may fail after its first row.
type rows struct {
	*sql.Rows
	fail    error // the injected fault, or nil
	stepped bool  // with fail set: the first row was offered
}

// Next is sql.Rows' Next; with a fault, the step after the first row fails
// (the first, when the result is empty).
func (r *rows) Next() bool {
	if r.fail == nil {
		return r.Rows.Next()
	}
	if r.stepped {
		return false
	}
	r.stepped = true
	return r.Rows.Next()
}

// Err is sql.Rows' Err, or the injected fault.
func (r *rows) Err() error {
	if r.fail != nil {
		return r.fail
	}
	return r.Rows.Err()
}

func (t *Tx) query(q string, args ...any) (*rows, error) {
	afterFirstRow, fault := t.statementFault()
	if fault != nil && !afterFirstRow {
		return nil, fault
	}
	var r *sql.Rows
	var err error
	if p := t.stmt(q); p != nil {
		r, err = p.QueryContext(t.s.ctx, args...)
	} else {
		r, err = t.tx.QueryContext(t.s.ctx, q, args...)
	}
	if err != nil {
		return nil, err
	}
	return &rows{Rows: r, fail: fault}, nil
}

func (t *Tx) nowMS() int64 { return t.s.now().UnixMilli() }
