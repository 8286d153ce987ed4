package app

import (
	"strings"
	"testing"
)

// TestConfigBoundsOfEveryField walks every bounded field of the
// configuration file: each number's bound is "must not be negative", so
// -1 is refused with the field named and 0 (the default) and 1 are read;
// a duration's is the same; an agent block that says anything needs an
// image. "Every mistake is named, never ignored", and nothing within the
// bound is refused.
func TestConfigBoundsOfEveryField(t *testing.T) {
	withTask := func(github string) string {
		return `{"github":{},"tasks":[{"name":"a","identity":{"repositoryId":"r","taskId":"t","planId":"p"},"github":` + github + `}]}`
	}
	agent := func(field string) string { return `{"runner":{"agent":{"image":"a:1",` + field + `}}}` }
	for _, c := range []struct {
		field string
		at    func(v string) string // the configuration with the field set to v
		want  string                // the refusal of -1
	}{
		{"runner.slots", func(v string) string { return `{"runner":{"slots":` + v + `}}` }, "runner.slots: must not be negative"},
		{"runner.diagnosticsCapBytes", func(v string) string { return `{"runner":{"diagnosticsCapBytes":` + v + `}}` }, "runner.diagnosticsCapBytes: must not be negative"},
		{"runner.agent.memoryBytes", func(v string) string { return agent(`"memoryBytes":` + v) }, "runner.agent: limits must not be negative"},
		{"runner.agent.cpus", func(v string) string { return agent(`"cpus":` + v) }, "runner.agent: limits must not be negative"},
		{"runner.agent.pids", func(v string) string { return agent(`"pids":` + v) }, "runner.agent: limits must not be negative"},
		{"runner.agent.outputLimitBytes", func(v string) string { return agent(`"outputLimitBytes":` + v) }, "runner.agent: limits must not be negative"},
		{"runner.agent.commitLimitBytes", func(v string) string { return agent(`"commitLimitBytes":` + v) }, "runner.agent: limits must not be negative"},
		{"tasks[0].github.pullRequest", func(v string) string { return withTask(`{"repo":"o/r","pullRequest":` + v + `}`) }, "tasks[0].github: numbers must not be negative"},
		{"tasks[0].github.issue", func(v string) string { return withTask(`{"repo":"o/r","issue":` + v + `}`) }, "tasks[0].github: numbers must not be negative"},
		{"runner.attemptTimeout", func(v string) string { return `{"runner":{"attemptTimeout":"` + v + `s"}}` }, "negative"},
		{"runner.budget", func(v string) string { return `{"runner":{"budget":"` + v + `s"}}` }, "negative"},
	} {
		if _, err := ParseConfig([]byte(c.at("-1"))); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s = -1: %v, want %q", c.field, err, c.want)
		}
		for _, v := range []string{"0", "1"} {
			if _, err := ParseConfig([]byte(c.at(v))); err != nil {
				t.Errorf("%s = %s is within its bound, refused: %v", c.field, v, err)
			}
		}
	}
	// Without an image the agent block says nothing else.
	for _, field := range []string{`"argv":["x"]`, `"env":["X"]`, `"network":"n"`, `"memoryBytes":1`, `"cpus":0.5`, `"pids":1`,
		`"outputLimitBytes":1`, `"commitLimitBytes":1`} {
		src := `{"runner":{"agent":{` + field + `}}}`
		if _, err := ParseConfig([]byte(src)); err == nil || !strings.Contains(err.Error(), "runner.agent.image: required") {
			t.Errorf("%s: %v, want the image required", src, err)
		}
	}
	for _, src := range []string{`{"runner":{"agent":{}}}`, agent(`"env":["_TOKEN1","b"]`), `{"listen":""}`,
		`{"github":{"tokenEnv":"","apiUrl":""}}`, `{"github":{"tokenEnv":"GH_TOKEN","apiUrl":"http://127.0.0.1:9/api"}}`} {
		if _, err := ParseConfig([]byte(src)); err != nil {
			t.Errorf("%s is a valid configuration, refused: %v", src, err)
		}
	}
	for _, c := range []struct{ src, want string }{
		{agent(`"env":["OK","1BAD"]`), "runner.agent.env[1]"},
		{`{"github":{"apiUrl":"https://"}}`, "github.apiUrl"},
		{`{"github":{"apiUrl":"::"}}`, "github.apiUrl"},
		{`{"tasks":[{"name":"a","identity":{"repositoryId":"r","taskId":"t","planId":""}}]}`, "tasks[0].identity"},
	} {
		if _, err := ParseConfig([]byte(c.src)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.src, err, c.want)
		}
	}
}
