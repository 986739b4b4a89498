package servecmd

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/web"
	"github.com/aicloud/gpusuite/internal/webconfig"
)

// front is serve's one HTTP mux on ingest.metrics_listen. It listens
// before the writer store is open, so that /metrics says the daemon is
// waiting for another writer; the dashboard's paths answer 503 until the
// store is open and the web handlers are mounted.
type front struct {
	mux   *http.ServeMux
	ready atomic.Bool
}

func newFront(reg *prometheus.Registry) *front {
	f := &front{mux: http.NewServeMux()}
	f.mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	return f
}

// Handle adds a handler next to /metrics (web.Mount's handle).
func (f *front) Handle(pattern string, h http.Handler) { f.mux.Handle(pattern, h) }

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !f.ready.Load() && r.URL.Path != "/metrics" {
		http.Error(w, "gpuacct serve is waiting for the ledger's writer lock (see /metrics: gpuacct_store_writer_waiting)", http.StatusServiceUnavailable)
		return
	}
	f.mux.ServeHTTP(w, r)
}

// listen serves f on addr ("" serves nothing), through wc.ConfigFile
// (TLS, basic auth) when set, with the security headers on every
// answer, and sends the bound address to addrs when it is not nil. stop
// shuts the server down.
func (f *front) listen(ctx context.Context, addr string, wc config.Web, addrs chan<- string, log *slog.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listen %q: %w", addr, err)
	}
	srv := web.NewServer(web.Secure(web.ReadOnly(f)), wc.Timeout.Duration)
	webconfig.Start(ln, srv, wc.ConfigFile, log, "listening for /metrics and the dashboard")
	if addrs != nil {
		select {
		case addrs <- ln.Addr().String():
		default:
		}
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}, nil
}

// writerGauges are the store's side of serve's /metrics: which engine,
// and whether serve is waiting for another writer to let go.
type writerGauges struct {
	waiting prometheus.Gauge
}

func newWriterGauges(reg prometheus.Registerer, url string) writerGauges {
	engine := store.EngineSQLite
	if url != "" {
		engine = store.EnginePostgres
	}
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gpuacct_store_engine_info", Help: "The ledger's engine (sqlite or postgres), always 1."}, []string{"engine"})
	info.WithLabelValues(engine).Set(1)
	g := writerGauges{waiting: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuacct_store_writer_waiting",
		Help: "1 while serve waits for another writer to let go of the ledger, 0 once it holds the writer lock."})}
	reg.MustRegister(info, g.waiting)
	return g
}
