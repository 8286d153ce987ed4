package store

import (
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/codeboost/codeboost/ids"
)

// app_settings keys of the runner owner token ("Second prerequisite before F1
// merges", row "Runner owner token").
const (
	settingOwnerToken  = "runner_owner_token"
	settingOwnerDevice = "runner_owner_device"
	settingOwnerInode  = "runner_owner_inode"
)

// ErrBadOwnerToken is returned when the stored runner owner token is not 32
// lowercase hexadecimal characters. Startup exits on it: the value is never
// used as a label or in a path.
var ErrBadOwnerToken = errors.New("the stored runner owner token is not 32 lowercase hexadecimal characters")

// RunnerOwnerToken reads the runner owner token for the database file with
// the given device and inode (the locked file: lock.Lock's Device and Inode),
// or creates one (startup recovery step 2a, after the lock is taken and the
// Store is opened). Call it in Update: it writes when it creates a token.
//
//   - A stored token that is not ^[0-9a-f]{32}$ is refused with
//     ErrBadOwnerToken before it is used anywhere.
//   - A stored device or inode that differs from the arguments means the
//     database was copied: a new token is created and stored with the new
//     device and inode, so a copy never shares a token with its original.
//   - With no stored token, one is created.
//
// newToken makes the new token (nil: the Store's ID source); its value is
// checked too. The write touches only app_settings: no task, state version
// or context generation changes.
func (t *Tx) RunnerOwnerToken(device, inode uint64, newToken func() string) (string, error) {
	return t.ownerToken(runnerOwnerKeys, device, inode, newToken)
}

// AskOwnerToken is Ask's owner token ("Ask's owner": "a second
// per-database token, ask_owner (Store.askOwnerToken, same rules as the
// runner token)"): Ask labels its question attempts' objects with it, so
// the runner's recovery never sees Ask's storage and Ask's recovery never
// removes the runner's agents. The same rules as RunnerOwnerToken: a bad
// stored token is refused, a copied database gets a new one.
func (t *Tx) AskOwnerToken(device, inode uint64, newToken func() string) (string, error) {
	return t.ownerToken(askOwnerKeys, device, inode, newToken)
}

// PlanningOwnerToken is live planning's owner token: its containers are
// "labelled with this database's planning owner (not the runner's or
// Ask's)", so each lane's recovery touches only its own. The same rules
// as RunnerOwnerToken.
func (t *Tx) PlanningOwnerToken(device, inode uint64, newToken func() string) (string, error) {
	return t.ownerToken(planningOwnerKeys, device, inode, newToken)
}

// ownerKeys are the app_settings keys of one owner token and the file it
// was made for.
type ownerKeys struct {
	name                 string
	token, device, inode string
	bad                  error // the refusal of a stored token that is not one
}

var (
	runnerOwnerKeys   = ownerKeys{"runner owner token", settingOwnerToken, settingOwnerDevice, settingOwnerInode, ErrBadOwnerToken}
	askOwnerKeys      = ownerKeys{"Ask owner token", "ask_owner_token", "ask_owner_device", "ask_owner_inode", ErrBadAskOwnerToken}
	planningOwnerKeys = ownerKeys{"planning owner token", "planning_owner_token", "planning_owner_device", "planning_owner_inode",
		ErrBadPlanningOwnerToken}
)

// ErrBadPlanningOwnerToken is ErrBadOwnerToken for planning's token.
var ErrBadPlanningOwnerToken = errors.New("the stored planning owner token is not 32 lowercase hexadecimal characters")

// ErrBadAskOwnerToken is ErrBadOwnerToken for Ask's token.
var ErrBadAskOwnerToken = errors.New("the stored Ask owner token is not 32 lowercase hexadecimal characters")

func (t *Tx) ownerToken(k ownerKeys, device, inode uint64, newToken func() string) (string, error) {
	token, hasToken, err := t.ownerSetting(k.token)
	if err != nil {
		return "", err
	}
	if hasToken && !ids.ValidToken(token) {
		if len(token) > 64 {
			token = token[:64] + "…"
		}
		return "", fmt.Errorf("store: %w: %q", k.bad, token)
	}
	dev, _, err := t.ownerSetting(k.device)
	if err != nil {
		return "", err
	}
	ino, _, err := t.ownerSetting(k.inode)
	if err != nil {
		return "", err
	}
	wantDev, wantIno := strconv.FormatUint(device, 10), strconv.FormatUint(inode, 10)
	if hasToken && dev == wantDev && ino == wantIno {
		return token, nil
	}
	if newToken == nil {
		newToken = t.s.ids.Token
	}
	token = newToken()
	if !ids.ValidToken(token) {
		return "", fmt.Errorf("store: a new %s %q is not 32 lowercase hexadecimal characters", k.name, token)
	}
	for _, kv := range [][2]string{
		{k.token, token},
		{k.device, wantDev},
		{k.inode, wantIno},
	} {
		if _, err := t.exec(`INSERT INTO app_settings (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, kv[0], kv[1]); err != nil {
			return "", fmt.Errorf("store: save the %s: %w", k.name, err)
		}
	}
	return token, nil
}

// ownerSetting reads one app_settings value.
func (t *Tx) ownerSetting(key string) (string, bool, error) {
	var v string
	err := t.queryRow(`SELECT value FROM app_settings WHERE key = ?`, key).Scan(&v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("store: read app_settings %s: %w", key, err)
	}
	return v, true, nil
}
