// Package metrics serves a Prometheus registry over HTTP at /metrics for the
// daemons' opt-in --metrics-listen flag (docs/management.md §7). The collectors
// live beside what they read (vnicd, cmd/internal/fmd); this package only
// owns the registry and the listener.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/opavnic/opavnic/internal/buildinfo"
)

// NewRegistry returns a registry with the Go runtime and process collectors
// and the build (BuildInfoCollector).
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		BuildInfoCollector())
	return reg
}

// BuildInfoCollector exports opavnic_build_info, always 1, labelled with the
// running binary's build as --version prints it (buildinfo): version,
// revision (the commit, "" when the binary was not stamped with one),
// modified ("true" when built from a checkout with changes not committed)
// and goversion.
func BuildInfoCollector() prometheus.Collector {
	in := buildinfo.Read()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "opavnic_build_info",
		Help: "Always 1; the labels say which build of opavnic runs (as --version prints it).",
		ConstLabels: prometheus.Labels{"version": in.Version, "revision": in.Revision,
			"modified": strconv.FormatBool(in.Modified), "goversion": in.GoVersion},
	})
	g.Set(1)
	return g
}

// Handler serves reg's exposition at /metrics and a short index at /.
func Handler(reg *prometheus.Registry, log *zap.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      zap.NewStdLog(log),
		ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "opavnic metrics: /metrics")
	})
	return mux
}

// idleTimeout closes a connection that has sent no new request for this long
// after its last answer, and writeTimeout one whose answer could not be
// written (a client that does not read) in that time. Without them, a client
// that kept its connections open after a scrape, or opened new ones without
// closing the old, held an fd and two goroutines per connection for as long
// as it lived: enough of them used up the daemon's fds (its TAPs, sockets and
// namespaces need them too). Two minutes keeps a connection across the
// scrapes of any usual interval. Tests lower idleTimeout.
var (
	idleTimeout  = 2 * time.Minute
	writeTimeout = 30 * time.Second
)

// Listen binds addr (host:port; port 0 picks one) and serves reg until ctx is
// done. It returns the bound address once listening, so a failure to bind is
// a start-up error.
func Listen(ctx context.Context, addr string, reg *prometheus.Registry, log *zap.Logger) (net.Addr, error) {
	if log == nil {
		log = zap.NewNop()
	}
	log = log.Named("metrics")
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	srv := &http.Server{Handler: Handler(reg, log), ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout: idleTimeout, WriteTimeout: writeTimeout}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx) //nolint:errcheck // shutting down
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", zap.Error(err))
		}
	}()
	log.Info("serving metrics", zap.Stringer("listen", ln.Addr()))
	return ln.Addr(), nil
}
