package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// httpTimeout bounds reading a request and writing a response: the HTTP
// server is for scrapers and probes on a small host, not for slow clients.
const httpTimeout = 10 * time.Second

// ServerConfig is what the HTTP server serves.
type ServerConfig struct {
	// Metrics is served at /metrics; nil answers 404.
	Metrics *Metrics
	// Ready returns nil when the node is ready to serve clients, else the
	// reason, which /readyz answers with 503.
	Ready func() error
	// Health is the cluster as this node sees it, for /v1/cluster/health;
	// it returns false while the node cannot tell yet (starting).
	Health func() (ClusterHealth, bool)
	Logger *slog.Logger
}

// Server is the HTTP server for operators: /metrics, /livez, /readyz and
// /v1/cluster/health.
type Server struct {
	cfg  ServerConfig
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// Listen binds addr (host:port; port 0 picks a free one) and serves in the
// background until Close.
func Listen(addr string, cfg ServerConfig) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ops: http.listen %s: %w", addr, err)
	}
	s := &Server{cfg: cfg, ln: ln, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", s.serveMetrics)
	mux.HandleFunc("GET /livez", s.serveLive)
	mux.HandleFunc("GET /readyz", s.serveReady)
	mux.HandleFunc("GET /v1/cluster/health", s.serveHealth)
	s.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: httpTimeout,
		ReadTimeout:       httpTimeout,
		WriteTimeout:      httpTimeout,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cfg.Logger.Error("http server stopped", "err", err)
		}
	}()
	return s, nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops the server, giving requests in progress a moment to finish.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.srv.Close()
	}
	<-s.done
	return err
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Metrics == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	s.cfg.Metrics.WritePrometheus(w)
}

func (s *Server) serveLive(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "ok")
}

func (s *Server) serveReady(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := s.cfg.Ready(); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, err)
		return
	}
	fmt.Fprintln(w, "ok")
}

func (s *Server) serveHealth(w http.ResponseWriter, _ *http.Request) {
	h, ok := s.cfg.Health()
	if !ok {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "starting: the cluster's state is not known yet")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(h)
}
