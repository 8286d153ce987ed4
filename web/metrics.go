package web

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics is GET /metrics in the Prometheus text format. Gauges are read
// at scrape time from the same status reads the API serves, so a scrape
// never sees a number the screen would not; the action counter counts
// outcomes as the server answers them.
type metrics struct {
	reg      *prometheus.Registry
	outcomes *prometheus.CounterVec

	recoverySeconds atomic.Int64 // milliseconds, set once startup recovery ends
	leftovers       atomic.Int64 // objects startup recovery reported for a person
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "codeboost_user_actions_total",
		Help: "User actions answered, by outcome (applied words, refused, bad-input, shutting-down, storage-error).",
	}, []string{"outcome"})
	m.reg.MustRegister(m.outcomes)
	return m
}

// refused counts a writing request answered with neither an outcome nor a
// recorded refusal (reply counts those, by their words): bad input, an
// unknown task or method, a body over its limit, shutdown, a storage error.
func (m *metrics) refused(status int) {
	var o string
	switch status {
	case http.StatusBadRequest:
		o = "bad-input"
	case http.StatusNotFound:
		o = "not-found"
	case http.StatusMethodNotAllowed:
		o = "method-not-allowed"
	case http.StatusRequestEntityTooLarge:
		o = "too-large"
	case http.StatusServiceUnavailable:
		o = "shutting-down"
	case http.StatusInternalServerError:
		o = "storage-error"
	default:
		return // 200 and 409: reply counted them by outcome
	}
	m.outcomes.WithLabelValues(o).Inc()
}

func (m *metrics) outcome(o string) {
	if o == "" {
		o = "applied"
	}
	m.outcomes.WithLabelValues(o).Inc()
}

// SetRecovery records what startup recovery took and left for a person,
// for the recovery gauges.
func (s *Server) SetRecovery(took time.Duration, leftovers int) {
	s.metrics.recoverySeconds.Store(took.Milliseconds())
	s.metrics.leftovers.Store(int64(leftovers))
}

// registerGauges adds the gauges that read the server's state at scrape time.
func (s *Server) registerGauges() {
	attempts := prometheus.NewDesc("codeboost_attempts", "Attempts of the configured tasks, by state.", []string{"state"}, nil)
	unresolved := prometheus.NewDesc("codeboost_unresolved_markers", "Tasks with an unresolved marker (Needs restart).", nil, nil)
	s.metrics.reg.MustRegister(collector{
		describe: []*prometheus.Desc{attempts, unresolved},
		collect: func(ch chan<- prometheus.Metric) {
			byState := map[string]int{"pending": 0, "running": 0, "completed": 0, "failed": 0, "cancelled": 0, "stale": 0}
			markers := 0
			for _, name := range s.names {
				st, err := s.opt.Runner.Status(s.tasks[name].Identity.Key())
				if err != nil {
					continue
				}
				for _, a := range st.Attempts {
					byState[string(a.State)]++
				}
				if st.Unresolved != nil {
					markers++
				}
			}
			for state, n := range byState {
				ch <- prometheus.MustNewConstMetric(attempts, prometheus.GaugeValue, float64(n), state)
			}
			ch <- prometheus.MustNewConstMetric(unresolved, prometheus.GaugeValue, float64(markers))
		},
	})
	s.metrics.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "codeboost_runner_slots_in_use", Help: "Runner slots held (a slot is freed only after the container stopped and the terminal state was saved).",
	}, func() float64 { return float64(s.opt.Runner.SlotsUsed()) }))
	s.metrics.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "codeboost_recovery_duration_seconds", Help: "How long startup recovery took.",
	}, func() float64 { return float64(s.metrics.recoverySeconds.Load()) / 1000 }))
	s.metrics.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "codeboost_leftover_objects_reported", Help: "Objects startup recovery reported for a person to handle (never touched by the runner).",
	}, func() float64 { return float64(s.metrics.leftovers.Load()) }))
}

func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{})
}

// collector is a prometheus.Collector from two funcs.
type collector struct {
	describe []*prometheus.Desc
	collect  func(chan<- prometheus.Metric)
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.describe {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }
