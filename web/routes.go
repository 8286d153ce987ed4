package web

import (
	"embed"
	"io/fs"
	"net/http"
)

// ui is the review screen: plain HTML, CSS and a few ES modules (app.js
// and the panels' modules it imports), embedded in the binary. No build
// step: the page is small enough that a bundler would add a toolchain and
// hide nothing worth hiding.
//
//go:embed ui
var ui embed.FS

func (s *Server) routes() {
	s.registerGauges()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/runner", s.getRunner)
	mux.HandleFunc("POST /api/runner", s.postRunner)
	mux.HandleFunc("GET /api/review", s.getReview)
	mux.HandleFunc("POST /api/review", s.postReview)
	mux.HandleFunc("POST /api/plan/import", s.postPlanImport)
	mux.HandleFunc("GET /api/output", s.getOutput)
	mux.HandleFunc("GET /api/diff", s.getDiff)
	if s.opt.Merges != nil {
		mux.HandleFunc("POST /api/merge", s.postMerge)
		mux.HandleFunc("GET /api/merge", s.getMerge)
	}
	if s.opt.Questions != nil {
		mux.HandleFunc("POST /api/questions", s.postQuestion)
		mux.HandleFunc("GET /api/questions", s.getQuestions)
	}
	if s.opt.Planning != nil {
		s.planningRoutes(mux)
	}
	mux.Handle("GET /metrics", s.metricsHandler())
	static := s.opt.Static
	if static == nil {
		static, _ = fs.Sub(ui, "ui")
	}
	mux.Handle("GET /", http.FileServerFS(static))
	s.mux = mux
}
