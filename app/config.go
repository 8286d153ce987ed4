package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"time"

	"github.com/codeboost/codeboost/codehost"
	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/strictjson"
	"github.com/codeboost/codeboost/web"
)

// Config is the configuration file of `codeboost serve --config FILE`: the
// listen address, the Store, the runner block, and the tasks the server
// serves. It is JSON, decoded strictly (strictjson: an unknown field, a
// key in another case and a repeated key are errors, so a misspelt key is
// never silently ignored and never wins over the right one). The README has a complete
// example; command-line flags override the file.
type Config struct {
	// Listen is the review server's address (default 127.0.0.1:8080). An
	// empty string after defaults means the server does not listen.
	Listen string `json:"listen"`
	// Store is the SQLite database file (--db overrides it).
	Store string `json:"store"`
	// Runner is the runner block.
	Runner RunnerConfig `json:"runner"`
	// Tasks are the tasks this server serves; a request names one by Name.
	Tasks []TaskConfig `json:"tasks"`
	// GitHub is the code host block: without it codeboost merges nothing
	// and plans nothing live.
	GitHub *GitHubConfig `json:"github"`
}

// GitHubConfig is where GitHub's REST API is and which environment
// variable holds its token (the token itself is never in the file).
type GitHubConfig struct {
	APIURL   string `json:"apiUrl"`   // default https://api.github.com
	TokenEnv string `json:"tokenEnv"` // default GITHUB_TOKEN
}

// TaskGitHub names a task's issue and pull request on GitHub.
type TaskGitHub struct {
	Repo        string `json:"repo"`        // owner/name
	PullRequest int    `json:"pullRequest"` // the pull request a merge merges; 0: none yet
	Issue       int    `json:"issue"`       // the issue the task works on; 0: none
}

// RunnerConfig is the runner block: where the runner keeps its files and
// its limits. Zero values take the runner's defaults.
type RunnerConfig struct {
	Root           string   `json:"root"`           // default <db dir>/codeboost-runner (--root overrides)
	DiagnosticsDir string   `json:"diagnosticsDir"` // default: the root
	DiagnosticsCap int64    `json:"diagnosticsCapBytes"`
	Slots          int      `json:"slots"`          // default 1
	AttemptTimeout Duration `json:"attemptTimeout"` // default 30m
	Budget         Duration `json:"budget"`         // the whole task's time budget, default 2h
	// Agent is how agents run. Without it (no image) the runner has no D:
	// the server reviews plans, and every attempt fails at its first
	// preparation step saying that no agent is configured.
	Agent AgentConfig `json:"agent"`
}

// AgentConfig is the agent profile: the image every attempt runs in, its
// command, the credentials it may see and its container's limits. The
// image must already be on the engine: codeboost never pulls.
type AgentConfig struct {
	Image string   `json:"image"`
	Argv  []string `json:"argv"`
	// Env names host environment variables passed to the agent (for
	// credentials); nothing else of the host's environment reaches it.
	Env []string `json:"env"`
	// Network is the Docker network the agent joins; "" for none.
	Network     string  `json:"network"`
	MemoryBytes int64   `json:"memoryBytes"`
	CPUs        float64 `json:"cpus"`
	PIDs        int64   `json:"pids"`
	OutputLimit int     `json:"outputLimitBytes"`
	// CommitLimit bounds the added and changed files of an attempt's
	// commit; past it the attempt fails, its partial output saved.
	CommitLimit int64 `json:"commitLimitBytes"`
}

// envName is what a POSIX environment variable name looks like.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (a AgentConfig) check() error {
	if a.Image == "" {
		if len(a.Argv)+len(a.Env) > 0 || a.Network != "" || a.MemoryBytes != 0 || a.CPUs != 0 || a.PIDs != 0 || a.OutputLimit != 0 || a.CommitLimit != 0 {
			return errors.New("runner.agent.image: required when the agent block says anything")
		}
		return nil
	}
	for i, e := range a.Env {
		if !envName.MatchString(e) {
			return fmt.Errorf("runner.agent.env[%d]: %q is not an environment variable name", i, e)
		}
	}
	if a.MemoryBytes < 0 || a.CPUs < 0 || a.PIDs < 0 || a.OutputLimit < 0 || a.CommitLimit < 0 {
		return errors.New("runner.agent: limits must not be negative")
	}
	return nil
}

// Profile is the agent block as D's agent profile.
func (a AgentConfig) Profile() dadapter.AgentProfile {
	return dadapter.AgentProfile{Image: a.Image, Argv: a.Argv, Env: a.Env, Network: a.Network,
		MemoryBytes: a.MemoryBytes, NanoCPUs: int64(a.CPUs * 1e9), PIDs: a.PIDs, OutputLimit: a.OutputLimit}
}

// TaskConfig is one served task: a repository and its plan identity under
// a name. The identity is trusted configuration: no request can name
// another.
type TaskConfig struct {
	Name       string         `json:"name"`
	Repository string         `json:"repository"`
	Identity   IdentityConfig `json:"identity"`
	// Snapshot is the review snapshot the task starts from (default
	// "initial"); used only when the task is first created.
	Snapshot string `json:"snapshot"`
	// GitHub names the task's issue and pull request (needs the github
	// block).
	GitHub *TaskGitHub `json:"github"`
}

// IdentityConfig is a plan identity: the repository, the task and the plan
// it belongs to.
type IdentityConfig struct {
	RepositoryID string `json:"repositoryId"`
	TaskID       string `json:"taskId"`
	PlanID       string `json:"planId"`
}

// Duration is a time.Duration written as Go writes it ("30m", "2h").
type Duration time.Duration

// UnmarshalJSON reads "30m" and the like.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"30m\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as Go writes it.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// DefaultListen is where the review server listens when nothing says
// otherwise: loopback only, since the API has no authentication of its own.
const DefaultListen = "127.0.0.1:8080"

// maxConfig bounds the configuration file.
const maxConfig = 1 << 20

// LoadConfig reads and checks a configuration file.
func LoadConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	if len(b) > maxConfig {
		return Config{}, fmt.Errorf("%s: over %d bytes", path, maxConfig)
	}
	c, err := ParseConfig(b)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseConfig decodes and checks a configuration.
func ParseConfig(b []byte) (Config, error) {
	c := Config{Listen: DefaultListen}
	if err := strictjson.Unmarshal(b, &c); err != nil {
		return Config{}, err
	}
	return c, c.check()
}

func (c Config) check() error {
	if c.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			return fmt.Errorf("listen: %w", err)
		}
	}
	if c.Runner.Slots < 0 {
		return errors.New("runner.slots: must not be negative")
	}
	if c.Runner.DiagnosticsCap < 0 {
		return errors.New("runner.diagnosticsCapBytes: must not be negative")
	}
	if err := c.Runner.Agent.check(); err != nil {
		return err
	}
	names := map[string]bool{}
	keys := map[string]string{}
	for i, t := range c.Tasks {
		where := fmt.Sprintf("tasks[%d]", i)
		if err := web.CheckTaskName(t.Name); err != nil {
			return fmt.Errorf("%s.name: %w", where, err)
		}
		if names[t.Name] {
			return fmt.Errorf("%s.name: %q is configured twice", where, t.Name)
		}
		names[t.Name] = true
		id := t.identity()
		if err := id.Check(); err != nil {
			return fmt.Errorf("%s.identity: %w", where, err)
		}
		if other, dup := keys[id.Key()]; dup {
			return fmt.Errorf("%s.identity: the same plan identity as task %q", where, other)
		}
		keys[id.Key()] = t.Name
		if t.GitHub != nil {
			if c.GitHub == nil {
				return fmt.Errorf("%s.github: names a pull request, but the configuration has no github block", where)
			}
			if err := codehost.CheckRepo(t.GitHub.Repo); err != nil {
				return fmt.Errorf("%s.github.repo: %w", where, err)
			}
			if t.GitHub.PullRequest < 0 || t.GitHub.Issue < 0 {
				return fmt.Errorf("%s.github: numbers must not be negative", where)
			}
		}
	}
	if c.GitHub != nil {
		if c.GitHub.TokenEnv != "" && !envName.MatchString(c.GitHub.TokenEnv) {
			return fmt.Errorf("github.tokenEnv: %q is not an environment variable name", c.GitHub.TokenEnv)
		}
		if c.GitHub.APIURL != "" {
			if u, err := url.Parse(c.GitHub.APIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				return fmt.Errorf("github.apiUrl: %q is not an http(s) URL", c.GitHub.APIURL)
			}
		}
	}
	return nil
}

func (t TaskConfig) identity() store.Identity {
	return store.Identity{RepositoryID: t.Identity.RepositoryID, TaskID: t.Identity.TaskID, PlanID: t.Identity.PlanID}
}

func (t TaskConfig) webTask() web.Task {
	return web.Task{Name: t.Name, Repository: t.Repository, Identity: t.identity()}
}
