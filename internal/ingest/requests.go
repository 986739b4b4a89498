package ingest

import (
	"context"
	"os"

	"github.com/aicloud/gpusuite/internal/requests"
)

// applyRequests applies the writer's request queue (requests.Writer: the
// `gpuacct ignore`/`unignore` and `gpuacct note` kinds): only the writer
// may change the ledger, so while serve holds the lock the commands leave
// requests for it (docs/reports.md, docs/board.md). A failure is logged
// and retried next pass; it never stops ingest.
func (in *Ingester) applyRequests(ctx context.Context) {
	dir := in.d.Config.Report.Requests
	if dir == "" {
		return
	}
	host, _ := os.Hostname()
	q := requests.Writer(in.d.Store, requests.Options{
		Dir: dir, Now: in.d.Now(), Host: host, Tag: in.d.Config.Report.IgnoreTag, Cluster: in.d.Config.Cluster.Name,
		Trusted: func(uid int) bool { return uid == 0 || uid == in.d.UID },
		LiveDir: in.d.Config.Board.LiveDir, Log: in.d.Log,
	})
	n, err := q.Apply(ctx)
	if err != nil {
		in.d.Log.Error("ignore and note requests not applied; retrying next pass", "dir", dir, "err", err)
		return
	}
	if n > 0 {
		in.d.Log.Info("ignore and note requests applied", "requests", n)
	}
}
