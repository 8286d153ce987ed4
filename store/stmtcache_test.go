package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/codeboost/codeboost/ids"
	"modernc.org/sqlite"
)

// The statement cache (Tx.stmt, Store.prepareSeen) is how the Store parses
// each SQL text once per store instead of once per transaction; recovery
// and the bench depend on it. These tests watch the driver underneath: which
// statements the connection prepares and which it runs unprepared.

// countingDriver is modernc's driver with counters on its connection.
type countingDriver struct {
	mu       sync.Mutex
	prepared map[string]int // conn.Prepare calls, by SQL text
	direct   map[string]int // statements the connection ran without a prepared statement
}

func (d *countingDriver) note(m map[string]int, q string) {
	d.mu.Lock()
	m[q]++
	d.mu.Unlock()
}

func (d *countingDriver) reset() {
	d.mu.Lock()
	d.prepared, d.direct = map[string]int{}, map[string]int{}
	d.mu.Unlock()
}

func (d *countingDriver) counts(q string) (prepared, direct int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.prepared[q], d.direct[q]
}

type countingConnector struct {
	d   *countingDriver
	dsn string
}

func (c countingConnector) Connect(context.Context) (driver.Conn, error) {
	inner, err := (&sqlite.Driver{}).Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return &countingConn{inner: inner, d: c.d}, nil
}

func (c countingConnector) Driver() driver.Driver { return &sqlite.Driver{} }

// countingConn forwards to modernc's connection, counting prepares and
// unprepared statements.
type countingConn struct {
	inner driver.Conn
	d     *countingDriver
}

func (c *countingConn) Prepare(q string) (driver.Stmt, error) {
	c.d.note(c.d.prepared, q)
	return c.inner.Prepare(q)
}

func (c *countingConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	c.d.note(c.d.prepared, q)
	return c.inner.(driver.ConnPrepareContext).PrepareContext(ctx, q)
}

func (c *countingConn) Close() error { return c.inner.Close() }

func (c *countingConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.inner.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *countingConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	c.d.note(c.d.direct, q)
	return c.inner.(driver.ExecerContext).ExecContext(ctx, q, args)
}

func (c *countingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	c.d.note(c.d.direct, q)
	return c.inner.(driver.QueryerContext).QueryContext(ctx, q, args)
}

// openCounting opens a Store as Open does, on a counting connection.
func openCounting(t *testing.T) (*Store, *countingDriver) {
	t.Helper()
	d := &countingDriver{}
	d.reset()
	db := sql.OpenDB(countingConnector{d: d, dsn: DSN(filepath.Join(t.TempDir(), "codeboost.db"))})
	db.SetMaxOpenConns(1)
	ctx, cancel := context.WithCancel(context.Background())
	now := time.Date(2026, 9, 25, 12, 0, 0, 0, time.UTC)
	s := &Store{db: db, ctx: ctx, cancel: cancel, now: func() time.Time { return now }, ids: ids.NewSeeded(1)}
	if err := s.migrate(); err != nil {
		s.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, d
}

// TestStatementsPreparedOncePerStore: the first transaction that meets a
// statement prepares it for itself and, once the connection is free, for
// the store; every later transaction runs the store's prepared statement
// (exec, query and queryRow alike), so the connection neither prepares that
// text again nor runs it unprepared.
//
// kills: mutant/statement-cache-never-filled mutant/statement-cache-never-used mutant/exec-ignores-prepared
func TestStatementsPreparedOncePerStore(t *testing.T) {
	s, d := openCounting(t)
	const (
		write = `INSERT INTO app_settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`
		one   = `SELECT value FROM app_settings WHERE key = ?`
		all   = `SELECT key, value FROM app_settings ORDER BY key`
	)
	use := func(tx *Tx, value string) error {
		if _, err := tx.exec(write, "k", value); err != nil {
			return err
		}
		var got string
		if err := tx.queryRow(one, "k").Scan(&got); err != nil {
			return err
		}
		if got != value {
			t.Errorf("read %q back, wrote %q", got, value)
		}
		rows, err := tx.query(all)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
		}
		return rows.Err()
	}
	if err := s.Update(func(tx *Tx) error { return use(tx, "first") }); err != nil {
		t.Fatal(err)
	}
	s.stmtMu.Lock()
	for _, q := range []string{write, one, all} {
		if s.stmts[q] == nil {
			t.Errorf("after its first transaction %q is not prepared for the store", q)
		}
	}
	s.stmtMu.Unlock()

	for i, run := range []func(func(*Tx) error) error{s.Update, s.View} {
		d.reset()
		err := run(func(tx *Tx) error {
			if i == 1 { // a read transaction: reads only
				var got string
				if err := tx.queryRow(one, "k").Scan(&got); err != nil {
					return err
				}
				rows, err := tx.query(all)
				if err != nil {
					return err
				}
				return rows.Close()
			}
			return use(tx, "second")
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{write, one, all} {
			if p, u := d.counts(q); p != 0 || u != 0 {
				t.Errorf("transaction %d: %q was prepared %d times and run unprepared %d times; want the store's statement", i+2, q, p, u)
			}
		}
	}
}
