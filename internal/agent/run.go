package agent

import (
	"context"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/aicloud/gpusuite/internal/agentproto"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/aicloud/gpusuite/internal/webconfig"
)

// Notifier sends systemd notifications (READY=1, WATCHDOG=1, STOPPING=1).
type Notifier interface {
	Notify(state string)
	// WatchdogInterval is systemd's WatchdogSec, 0 when off.
	WatchdogInterval() time.Duration
}

// Run samples, serves the hook socket and /metrics and ships, until ctx
// ends; then it closes the open segment into the spool and ships once
// more within a bound. It returns an error only when it cannot start or
// cannot keep recording.
func (a *Agent) Run(ctx context.Context, socketPath, metricsListen string, n Notifier) error {
	if err := a.Cycle(ctx); err != nil {
		return err
	}
	ln, err := listenSocket(socketPath)
	if err != nil {
		return err
	}
	defer os.Remove(socketPath)
	defer ln.Close()
	// Once the socket is this agent's: a second agent started by mistake
	// must not replace the running one's inventory.
	a.inventory = agentproto.InventoryPath(socketPath)
	a.publishInventory()
	defer os.Remove(a.inventory)
	sctx, cancelSock := context.WithCancel(context.Background())
	defer cancelSock()
	go a.serveSocket(sctx, ln)
	if p := a.cfg.ProfileSocket; p != "" {
		// profiling is a side service: the agent samples and ships without it
		if pln, err := listenProfileSocket(p); err != nil {
			a.log.Error("profiling is off: cannot open the profile socket", "err", err)
		} else {
			defer os.Remove(p)
			defer pln.Close()
			go a.serveProfiles(sctx, pln)
		}
	}

	if metricsListen != "" {
		ml, err := net.Listen("tcp", metricsListen)
		if err != nil {
			return err
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(a.metrics.reg, promhttp.HandlerOpts{}))
		srv := webconfig.MetricsServer(mux)
		// TLS and basic auth as agent.web_config_file says.
		webconfig.Start(ml, srv, a.cfg.WebConfigFile, a.log, "serving /metrics")
		defer srv.Close()
	}

	shipCtx, stopShip := context.WithCancel(context.Background())
	shipDone := make(chan struct{})
	go func() { a.shipLoop(shipCtx); close(shipDone) }()
	if a.live != nil {
		liveCtx, stopLive := context.WithCancel(context.Background())
		defer stopLive()
		go a.liveLoop(liveCtx)
	}

	n.Notify("READY=1")
	a.log.Info("agent running", "node", a.node, "gpus", len(a.devs), "interval", a.interval, "socket", socketPath)
	tick := time.NewTicker(a.interval)
	defer tick.Stop()
	var wd <-chan time.Time
	if w := n.WatchdogInterval(); w > 0 {
		t := time.NewTicker(w / 2)
		defer t.Stop()
		wd = t.C
	}
	var runErr error
	failures := 0
	// the 100 ms profile tick runs only while a profile is asked or runs
	var profTick *time.Ticker
	var profC <-chan time.Time
	defer func() {
		if profTick != nil {
			profTick.Stop()
		}
	}()
loop:
	for {
		switch on := a.profiling(a.now()); {
		case on && profTick == nil:
			profTick = time.NewTicker(agentproto.MinProfileInterval)
			profC = profTick.C
		case !on && profTick != nil:
			profTick.Stop()
			profTick, profC = nil, nil
		}
		select {
		case <-ctx.Done():
			break loop
		case tk := <-tick.C:
			a.keepInventory()
			// Stamped at the tick: a late start must not crowd the next.
			if err := a.cycleAt(ctx, a.now().Add(-time.Since(tk)).UTC()); err != nil {
				failures++
				a.log.Error("cannot record samples", "err", err, "consecutive", failures)
				if failures >= 10 {
					runErr = err
					break loop
				}
				continue
			}
			failures = 0
		case <-wd:
			// only the loop pings: a stuck loop lets systemd restart us
			n.Notify("WATCHDOG=1")
		case ev := <-a.announce:
			// applied at once; checkpointed at the next roll, before any
			// event file is shipped (the spooled copy covers a crash)
			if a.applyEvent(ev) {
				a.dirty = true
			}
		case reply := <-a.scanReq:
			reply <- a.scanEvents()
		case e := <-a.gpuEvents:
			a.gpuEvent(e)
		case r := <-a.profReq:
			r.reply <- a.startProfile(r)
		case <-profC:
			if err := a.profileTick(ctx, a.now().UTC()); err != nil {
				a.log.Error("cannot record profile samples", "err", err)
			}
		}
	}
	n.Notify("STOPPING=1")
	a.log.Info("stopping: closing the open segment and shipping once more")
	ln.Close()
	cancelSock()
	stopShip()
	select {
	case <-shipDone:
	case <-time.After(2 * time.Second):
	}
	for len(a.announce) > 0 {
		a.applyEvent(<-a.announce)
	}
	handled := a.scanEvents()
	if err := a.Stop(); err != nil {
		a.log.Error("cannot close the open segment; it will be recovered at the next start", "err", err)
	}
	done := make(chan struct{})
	fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() {
		if _, err := a.shipper.Pass(fctx, handled); err != nil {
			a.log.Warn("final shipping incomplete; the spool keeps the rest", "err", err, "backlog_files", a.backlog())
		}
		close(done)
	}()
	select {
	case <-done:
	case <-fctx.Done():
	}
	return runErr
}
