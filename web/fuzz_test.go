package web

import (
	"bytes"
	"database/sql"
	"net/http/httptest"
	"testing"

	"github.com/codeboost/codeboost/store"
	_ "modernc.org/sqlite"
)

// FuzzPost sends arbitrary bodies to every POST endpoint of one server and
// checks, after each, what must hold whatever the input: no 5xx, no panic,
// no partial write (an answer that is not 200 or 409 changed nothing; every
// feedback event has its user action; a state version moved only with a
// recorded action), and no duplicated event. Its seed corpus is in
// testdata/fuzz/FuzzPost; CI runs it briefly (`go test -fuzz`).
func FuzzPost(f *testing.F) {
	for _, seed := range []struct {
		path byte
		body string
	}{
		{0, `{"task":"demo","action":"start","expectedStateVersion":1,"expectedReviewVersion":1,"actionId":"00000000-0000-4000-8000-000000000001"}`},
		{0, `{"task":"demo","action":"cancel-task","expectedStateVersion":0,"actionId":"00000000-0000-4000-8000-000000000002"}`},
		{1, `{"task":"demo","action":"approve","item":1,"expectedReviewVersion":0,"actionId":"00000000-0000-4000-8000-000000000003"}`},
		{1, `{"task":"demo","action":"change-note","item":1,"text":"keep it","actionId":"00000000-0000-4000-8000-000000000004"}`},
		{1, `{"task":"demo","action":"reject","expectedRevision":1,"notes":[{"text":"no"}],"actionId":"00000000-0000-4000-8000-000000000005"}`},
		{1, `{"task":"demo","action":"guidance","text":"try v2","actionId":"00000000-0000-4000-8000-000000000006"}`},
		{2, `{"task":"demo","expectedRevision":1,"plan":"{\"format\":\"codeboost-plan/1\",\"title\":\"t\",\"items\":[{\"title\":\"a\",\"instructions\":\"b\"}]}","actionId":"00000000-0000-4000-8000-000000000007"}`},
		{0, `{"task":"demo","action":"start","actionId":"x"}`},
		{1, `not json`},
	} {
		f.Add(seed.path, []byte(seed.body))
	}
	fx := newFixture(f, 2)
	db, err := sql.Open("sqlite", "file:"+fx.w.DBPath+"?mode=ro")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	paths := []string{"/api/runner", "/api/review", "/api/plan/import"}
	f.Fuzz(func(t *testing.T, which byte, body []byte) {
		before := fx.snapshot(t, db)
		req := httptest.NewRequest("POST", paths[int(which)%len(paths)], bytes.NewReader(body))
		rec := httptest.NewRecorder()
		fx.srv.Handler().ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%d for %q: %s", rec.Code, body, rec.Body)
		}
		after := fx.snapshot(t, db)
		if rec.Code != 200 && rec.Code != 409 && after != before {
			t.Fatalf("HTTP %d changed the Store: %+v → %+v", rec.Code, before, after)
		}
		if after.stateVersion != before.stateVersion && after.actions == before.actions {
			t.Fatalf("the state version moved with no recorded action: %+v → %+v", before, after)
		}
		if after.orphanEvents != 0 || after.duplicateEvents != 0 {
			t.Fatalf("partial write: %+v", after)
		}
	})
}

// storeFacts are the counts a partial write would break.
type storeFacts struct {
	stateVersion    int64
	actions         int
	events          int
	orphanEvents    int // events with no user action of their own
	duplicateEvents int
}

func (f *fixture) snapshot(t *testing.T, db *sql.DB) storeFacts {
	t.Helper()
	var s storeFacts
	task, err := f.w.Store.Task(f.key)
	if err != nil {
		t.Fatal(err)
	}
	s.stateVersion = task.StateVersion
	if err := f.w.Store.View(func(tx *store.Tx) (err error) { s.actions, err = tx.UserActionCount(f.key); return err }); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		dst *int
		sql string
	}{
		{&s.events, `SELECT COUNT(*) FROM feedback_events`},
		{&s.orphanEvents, `SELECT COUNT(*) FROM feedback_events e WHERE NOT EXISTS
			(SELECT 1 FROM user_actions u WHERE u.plan_key = e.plan_key AND u.action_id = e.action_id)`},
		{&s.duplicateEvents, `SELECT COUNT(*) FROM (SELECT 1 FROM feedback_events GROUP BY plan_key, kind, action_id HAVING COUNT(*) > 1)`},
	} {
		if err := db.QueryRow(q.sql).Scan(q.dst); err != nil {
			t.Fatal(err)
		}
	}
	return s
}
