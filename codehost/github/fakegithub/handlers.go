package fakegithub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// GitHub's own messages, so that tests see what production would show.
const (
	msgNotFound      = "Not Found"
	msgBadCreds      = "Bad credentials"
	msgHeadModified  = "Head branch was modified. Review and try the merge again."
	msgNotMergeable  = "Pull Request is not mergeable"
	msgDraft         = "Pull Request is still a draft"
	msgBadJSON       = "Problems parsing JSON"
	msgMerged        = "Pull Request successfully merged"
	msgQueued        = "Pull Request queued to merge"
	supportedVersion = "2022-11-28"
)

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /repos/{owner}/{repo}/issues/{n}", s.getIssue)
	mux.HandleFunc("GET /repos/{owner}/{repo}/pulls/{n}", s.getPull)
	mux.HandleFunc("PUT /repos/{owner}/{repo}/pulls/{n}/merge", s.putMerge)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeMessage(w, http.StatusNotFound, msgNotFound)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.record(r)
		if r.Header.Get("Authorization") != "Bearer "+s.token {
			writeMessage(w, http.StatusUnauthorized, msgBadCreds)
			return
		}
		if v := r.Header.Get("X-GitHub-Api-Version"); v != "" && v != supportedVersion {
			writeMessage(w, http.StatusBadRequest, fmt.Sprintf("API version %q is not supported.", v))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// target reads {owner}/{repo} and {n} from the path; ok is false (and a
// 404 written) when n is not a number.
func target(w http.ResponseWriter, r *http.Request) (k key, ok bool) {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n <= 0 {
		writeMessage(w, http.StatusNotFound, msgNotFound)
		return key{}, false
	}
	return key{r.PathValue("owner") + "/" + r.PathValue("repo"), n}, true
}

// issueJSON is GitHub's issue object, as much of it as the client reads,
// plus pull_request, which GitHub's issues endpoint adds for a pull
// request.
type issueJSON struct {
	Number      int       `json:"number"`
	Title       string    `json:"title"`
	Body        *string   `json:"body"`
	State       string    `json:"state"`
	PullRequest *pullLink `json:"pull_request,omitempty"`
}

type pullLink struct {
	URL string `json:"url"`
}

type pullJSON struct {
	Number         int     `json:"number"`
	State          string  `json:"state"`
	Merged         bool    `json:"merged"`
	MergeCommitSHA *string `json:"merge_commit_sha"`
	Draft          bool    `json:"draft"`
	Mergeable      *bool   `json:"mergeable"`
	Head           ref     `json:"head"`
	Base           ref     `json:"base"`
}

type ref struct {
	SHA string `json:"sha,omitempty"`
	Ref string `json:"ref"`
}

func (s *Server) getIssue(w http.ResponseWriter, r *http.Request) {
	k, ok := target(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	status := s.failRead[readKey{k, false}]
	is, isIssue := s.issues[k]
	pr := s.pulls[k]
	var js issueJSON
	switch {
	case isIssue:
		js = issueJSON{Number: is.Number, Title: is.Title, State: is.State}
		if is.Body != "" {
			js.Body = &is.Body
		}
	case pr != nil:
		js = issueJSON{Number: pr.Number, State: pr.State,
			PullRequest: &pullLink{URL: fmt.Sprintf("%s/repos/%s/pulls/%d", s.srv.URL, k.repo, k.n)}}
	}
	s.mu.Unlock()
	switch {
	case status != 0:
		writeMessage(w, status, http.StatusText(status))
	case !isIssue && pr == nil:
		writeMessage(w, http.StatusNotFound, msgNotFound)
	default:
		writeJSON(w, http.StatusOK, js)
	}
}

func (s *Server) getPull(w http.ResponseWriter, r *http.Request) {
	k, ok := target(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	status := s.failRead[readKey{k, true}]
	var js *pullJSON
	if pr := s.pulls[k]; pr != nil {
		js = &pullJSON{Number: pr.Number, State: pr.State, Merged: pr.Merged, Draft: pr.Draft,
			Head: ref{SHA: pr.HeadSHA, Ref: "codeboost/" + strconv.Itoa(pr.Number)}, Base: ref{Ref: pr.BaseRef}}
		// Like GitHub, name a test merge commit while the pull request is
		// open, so that clients are tested on not taking it for a merge.
		sha := pr.MergeCommitSHA
		if !pr.Merged && pr.State == "open" {
			sha = commitID("test merge", k.repo, pr)
		}
		if sha != "" {
			js.MergeCommitSHA = &sha
		}
		if pr.Mergeable != nil {
			m := *pr.Mergeable
			js.Mergeable = &m
		}
	}
	s.mu.Unlock()
	switch {
	case status != 0:
		writeMessage(w, status, http.StatusText(status))
	case js == nil:
		writeMessage(w, http.StatusNotFound, msgNotFound)
	default:
		writeJSON(w, http.StatusOK, js)
	}
}

func (s *Server) putMerge(w http.ResponseWriter, r *http.Request) {
	k, ok := target(w, r)
	if !ok {
		return
	}
	var req struct {
		SHA         string `json:"sha"`
		MergeMethod string `json:"merge_method"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil {
		writeMessage(w, http.StatusBadRequest, msgBadJSON)
		return
	}
	s.mu.Lock()
	hold := s.holds[k]
	delete(s.holds, k)
	s.mu.Unlock()
	if hold != nil {
		close(hold.reached)
		<-hold.release // the merge is in flight until the test lets it answer
	}
	status, msg, sha := s.merge(k, req.SHA, req.MergeMethod)
	switch {
	case status == -1:
		// Dropped: no reply at all, not even a status line.
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic("fakegithub: cannot hijack the connection: " + err.Error())
		}
		conn.Close()
	case status == http.StatusOK:
		writeJSON(w, status, map[string]any{"sha": sha, "merged": true, "message": msg})
	default:
		writeMessage(w, status, msg)
	}
}

// merge applies GitHub's merge rules and the pull request's fault knob to
// one merge request. It returns the status to answer (-1: drop the
// connection), the message and, when merged, the merge commit.
func (s *Server) merge(k key, sha, method string) (status int, msg, mergeSHA string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pr := s.pulls[k]
	status, msg = http.StatusOK, msgMerged
	switch {
	case pr == nil:
		status, msg = http.StatusNotFound, msgNotFound
	case method != "" && method != "merge" && method != "squash" && method != "rebase":
		status, msg = http.StatusUnprocessableEntity, "Validation Failed"
	case pr.State != "open":
		status, msg = http.StatusMethodNotAllowed, msgNotMergeable
	case pr.Draft:
		status, msg = http.StatusMethodNotAllowed, msgDraft
	case sha != "" && sha != pr.HeadSHA:
		status, msg = http.StatusConflict, msgHeadModified
	case pr.Mergeable != nil && !*pr.Mergeable:
		status, msg = http.StatusMethodNotAllowed, msgNotMergeable
	}
	allowed := status == http.StatusOK

	f, hasFault := s.faults[k]
	if hasFault && (f.kind != faultQueue || allowed) {
		delete(s.faults, k) // a queue knob waits for a merge the rules allow
	} else {
		hasFault = false
	}
	switch {
	case !hasFault:
		if allowed {
			merge(k.repo, pr)
			return status, msg, pr.MergeCommitSHA
		}
		return status, msg, ""
	case f.kind == faultQueue:
		s.queued[k] = pr.HeadSHA
		return http.StatusAccepted, msgQueued, ""
	}
	if allowed && f.afterMerging {
		merge(k.repo, pr)
	}
	if f.kind == faultDrop {
		return -1, "", ""
	}
	return f.status, http.StatusText(f.status), ""
}

func writeMessage(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{
		"message":           msg,
		"documentation_url": "https://docs.github.com/rest",
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic("fakegithub: " + err.Error()) // the model's types always marshal
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}
