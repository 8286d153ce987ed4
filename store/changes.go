package store

import "fmt"

// ChangeToken identifies what this process can see of the database: it
// differs whenever a transaction of this Store has committed (commits) or
// another connection has (SQLite's data_version, which changes only for
// commits by other connections), so a reader can reuse what it computed
// from an earlier read while the token is unchanged. Status reads poll
// several times a second and the answer changes only with a commit.
type ChangeToken struct {
	commits uint64
	data    int64
}

// ChangeToken reads the token. Read it before the rows it guards: a commit
// between the two then shows as a changed token on the next read, never as
// rows filed under a token they do not match.
func (s *Store) ChangeToken() (ChangeToken, error) {
	if err := s.fp.Err("store/view"); err != nil {
		return ChangeToken{}, fmt.Errorf("store: begin read: %w", err)
	}
	t := ChangeToken{commits: s.commits.Load()}
	if err := s.db.QueryRowContext(s.ctx, "PRAGMA data_version").Scan(&t.data); err != nil {
		return ChangeToken{}, fmt.Errorf("store: begin read: %w", err)
	}
	return t, nil
}
