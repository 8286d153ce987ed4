package app

import (
	"strings"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`{"store":"cb.db","runner":{"slots":2,"attemptTimeout":"20m","budget":"3h","agent":{"image":"a:1","commitLimitBytes":1048576}},
		"tasks":[{"name":"parser-fix","repository":"/srv/parser","identity":{"repositoryId":"acme-parser","taskId":"142","planId":"p1"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != DefaultListen || c.Store != "cb.db" || c.Runner.Slots != 2 || time.Duration(c.Runner.AttemptTimeout) != 20*time.Minute ||
		time.Duration(c.Runner.Budget) != 3*time.Hour || len(c.Tasks) != 1 || c.Tasks[0].identity().Key() == "" ||
		c.Runner.Agent.CommitLimit != 1<<20 {
		t.Errorf("%+v", c)
	}
}

// TestParseConfigRefuses: every mistake is named, never ignored.
func TestParseConfigRefuses(t *testing.T) {
	task := func(name, repo, taskID string) string {
		return `{"name":"` + name + `","identity":{"repositoryId":"` + repo + `","taskId":"` + taskID + `","planId":"p"}}`
	}
	for _, tc := range []struct{ src, want string }{
		{`{"lisen":"x"}`, `unknown field "lisen"`},
		{`{"listen":"nohost"}`, "listen:"},
		{`{"runner":{"attemptTimeout":"soon"}}`, "invalid duration"},
		{`{"runner":{"attemptTimeout":30}}`, "a duration is a string"},
		{`{"runner":{"budget":"-1h"}}`, "negative"},
		{`{"runner":{"slots":-1}}`, "runner.slots"},
		{`{"runner":{"agent":{"image":"a:1","commitLimitBytes":-1}}}`, "runner.agent: limits must not be negative"},
		{`{"runner":{"agent":{"commitLimitBytes":1048576}}}`, "runner.agent.image: required"},
		{`{"tasks":[` + task("Bad Name", "r", "t") + `]}`, "tasks[0].name"},
		{`{"tasks":[` + task("a", "r", "t") + `,` + task("a", "r", "u") + `]}`, "configured twice"},
		{`{"tasks":[` + task("a", "r", "t") + `,` + task("b", "r", "t") + `]}`, `the same plan identity as task "a"`},
		{`{"tasks":[` + task("a", "../r", "t") + `]}`, "tasks[0].identity"},
		{`{"tasks":[{"name":"a","identity":{"repositoryId":"r","taskId":"t","planId":"p"},"github":{"repo":"o/r","pullRequest":1}}]}`, "has no github block"},
		{`{"github":{},"tasks":[{"name":"a","identity":{"repositoryId":"r","taskId":"t","planId":"p"},"github":{"repo":"../r","pullRequest":1}}]}`, "tasks[0].github.repo"},
		{`{"github":{},"tasks":[{"name":"a","identity":{"repositoryId":"r","taskId":"t","planId":"p"},"github":{"repo":"o/r","pullRequest":-1}}]}`, "must not be negative"},
		{`{"github":{"tokenEnv":"A=B"}}`, "github.tokenEnv"},
		{`{"github":{"apiUrl":"ftp://x"}}`, "github.apiUrl"},
		{`{} {}`, "invalid character '{' after top-level value"},
	} {
		_, err := ParseConfig([]byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.src, err, tc.want)
		}
	}
}

// TestParseConfigIsStrict: keys match exactly and once (issue 19: "listen"
// then "LISTEN" served on the second address); the error names the key,
// and nothing of the file is used.
// kills: mutant/json-keys-case-insensitive mutant/json-duplicate-keys-allowed
func TestParseConfigIsStrict(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`{"listen":"127.0.0.1:8080","LISTEN":"0.0.0.0:9999"}`, `unknown field "LISTEN" (keys match exactly, case included)`},
		{`{"Listen":"0.0.0.0:9999"}`, `unknown field "Listen"`},
		{`{"listen":"127.0.0.1:8080","listen":"0.0.0.0:9999"}`, `duplicate key "listen"`},
		{`{"runner":{"slots":1,"Slots":4}}`, `runner: unknown field "Slots"`},
		{`{"runner":{"slots":1,"slots":4}}`, `runner: duplicate key "slots"`},
		{`{"tasks":[{"name":"a","Name":"b"}]}`, `tasks[0]: unknown field "Name"`},
		{`{"runner":{"agent":{"image":"i","image":"j"}}}`, `runner.agent: duplicate key "image"`},
	} {
		c, err := ParseConfig([]byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.src, err, tc.want)
		}
		if c.Listen != "" || c.Runner.Slots != 0 {
			t.Errorf("%s: a refused configuration was used: %+v", tc.src, c)
		}
	}
}

// TestParseConfigNullKeepsDefault: null for the listen address leaves the
// default, as encoding/json did (strictjson keeps that rule).
func TestParseConfigNullKeepsDefault(t *testing.T) {
	c, err := ParseConfig([]byte(`{"listen":null}`))
	if err != nil || c.Listen != DefaultListen {
		t.Errorf("%v %q", err, c.Listen)
	}
}
