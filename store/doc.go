// Package store owns every durable record of codeboost: the SQLite schema,
// its migrations, and every write together with its guard. The legal
// transitions of the contract, admission, compare-and-swap on the state
// version, the context generation, the user-action protocol, feedback events
// and the write gate all live here and nowhere else, so that no caller can
// write a row the contract forbids.
//
// The store is synchronous: the runner calls it from its loop goroutine and
// every call returns only after its transaction has committed or rolled back.
// It may import modernc.org/sqlite and the standard library, plus the
// project's leaf packages words, ids, failpoints and plan (the plan
// document format, whose limits and spec reader the plan import shares).
//
// SQLite traps it avoids (design.md, "Dependencies, chosen"): WAL; write
// transactions begin IMMEDIATE (a deferred read-then-write transaction fails
// with SQLITE_BUSY_SNAPSHOT without waiting); one writer connection; foreign
// keys on; a busy timeout; and every call carries the store's cancellable
// context so that a closed store never leaves the busy handler sleeping.
package store
