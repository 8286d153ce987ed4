// Package github is the production codehost.Host: GitHub's REST API v3
// over net/http.
//
// It trusts nothing it receives. Bodies are read to a bound, decoded into
// only the fields codehost needs, and checked; host messages are bounded
// and scrubbed of the token before they reach an error; and every answer to
// a merge that is not a clear success or a clear refusal is reported as an
// unknown outcome (codehost.UnknownOutcomeError), never as "not merged".
package github

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/codeboost/codeboost/codehost"
)

const (
	// DefaultBaseURL is github.com's API; GitHub Enterprise Server's is
	// https://HOST/api/v3.
	DefaultBaseURL = "https://api.github.com"
	// DefaultTokenEnv is the variable TokenFromEnv reads when given "".
	DefaultTokenEnv = "GITHUB_TOKEN"
	// DefaultUserAgent is sent when Options.UserAgent is empty: GitHub
	// refuses requests without one.
	DefaultUserAgent = "codeboost"
	// APIVersion pins the REST API version, so that a change of GitHub's
	// default cannot change the answers under us.
	APIVersion = "2022-11-28"
	// MaxBody bounds every response body read: the fields needed are small
	// and an unbounded read is a way to exhaust memory.
	MaxBody = 1 << 20
)

// Options configures a Client.
type Options struct {
	BaseURL   string       // default DefaultBaseURL
	Token     string       // required; sent only in the Authorization header
	HTTP      *http.Client // default a new http.Client; its Timeout, if any, adds to ctx
	UserAgent string       // default DefaultUserAgent
}

// Client speaks to GitHub. It is immutable after New and safe for
// concurrent use.
type Client struct {
	base      *url.URL
	token     string
	http      *http.Client
	userAgent string
}

var _ codehost.Host = (*Client)(nil)

// New checks opts and returns a Client. It sends nothing.
func New(opts Options) (*Client, error) {
	base, err := parseBaseURL(opts.BaseURL)
	if err != nil {
		return nil, err
	}
	if err := checkToken(opts.Token); err != nil {
		return nil, err
	}
	hc := opts.HTTP
	if hc == nil {
		hc = &http.Client{}
	}
	ua := opts.UserAgent
	if ua == "" {
		ua = DefaultUserAgent
	}
	if strings.ContainsFunc(ua, isControl) {
		return nil, errors.New("github: the user agent contains control characters")
	}
	return &Client{base: base, token: opts.Token, http: hc, userAgent: ua}, nil
}

// parseBaseURL accepts only an absolute http(s) URL without credentials,
// query or fragment: credentials belong in Options.Token (where errors
// never show them), and the request paths are appended to the URL's path.
func parseBaseURL(raw string) (*url.URL, error) {
	if raw == "" {
		raw = DefaultBaseURL
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("github: the base URL does not parse: %s", codehost.Clip(err.Error()))
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("github: the base URL %q is not http or https", codehost.Clip(u.Redacted()))
	case u.Host == "":
		return nil, fmt.Errorf("github: the base URL %q has no host", codehost.Clip(u.Redacted()))
	case u.User != nil:
		return nil, errors.New("github: the base URL carries credentials; give the token as Options.Token")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, fmt.Errorf("github: the base URL %q has a query or fragment", codehost.Clip(u.Redacted()))
	}
	return u, nil
}

// checkToken refuses a token that could not be sent as a header. Its
// errors never include the token.
func checkToken(token string) error {
	if token == "" {
		return errors.New("github: no token given")
	}
	if strings.ContainsFunc(token, func(r rune) bool { return isControl(r) || r == ' ' }) {
		return errors.New("github: the token contains spaces or control characters")
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// TokenFromEnv reads the token from the environment variable name
// (DefaultTokenEnv when name is ""), so that it never has to appear on a
// command line. Surrounding white space (a newline from a file) is dropped.
func TokenFromEnv(name string) (string, error) {
	if name == "" {
		name = DefaultTokenEnv
	}
	v, ok := os.LookupEnv(name)
	if !ok {
		return "", fmt.Errorf("github: the environment variable %s is not set", codehost.Clip(name))
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return "", fmt.Errorf("github: the environment variable %s is empty", codehost.Clip(name))
	}
	if err := checkToken(v); err != nil {
		return "", fmt.Errorf("github: the environment variable %s: %w", codehost.Clip(name), err)
	}
	return v, nil
}

// reply is an HTTP answer: the status and the body read up to MaxBody.
// bodyErr is set when the body could not be read whole within the bound;
// the status still counts.
type reply struct {
	status  int
	body    []byte
	bodyErr error
}

var errTooLarge = fmt.Errorf("the body is larger than %d bytes", MaxBody)

// do sends one request. An error means no status line came back (a
// transport failure or ctx ending), so the request may or may not have
// reached the host.
func (c *Client) do(ctx context.Context, method string, path []string, body []byte) (reply, error) {
	u := c.base.JoinPath(path...)
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", APIVersion)
	req.Header.Set("User-Agent", c.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	r := reply{status: resp.StatusCode}
	r.body, r.bodyErr = io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if r.bodyErr == nil && len(r.body) > MaxBody {
		r.body, r.bodyErr = nil, errTooLarge
	}
	return r, nil
}

// redact removes the token from text that came from elsewhere (a host's
// message, a transport error) and bounds it, before it goes into an error.
func (c *Client) redact(s string) string {
	return codehost.Clip(strings.ReplaceAll(s, c.token, "[redacted]"))
}

// hostMessage is the bounded message of an error body: GitHub's
// {"message": "..."} when the body is that, else the body's text.
func (c *Client) hostMessage(r reply) string {
	if r.bodyErr != nil {
		return "(" + c.redact(r.bodyErr.Error()) + ")"
	}
	var m struct {
		Message string `json:"message"`
	}
	if err := decode(r.body, &m); err == nil && m.Message != "" {
		return c.redact(m.Message)
	}
	if text := c.redact(string(r.body)); text != "" {
		return text
	}
	return http.StatusText(r.status)
}
