package web

import (
	"net/http"

	"github.com/aicloud/gpusuite/internal/report"
)

// runUsage is the run's use of its CPUs, host memory and time limit from
// sacct, with what to ask for next time; nil when sacct gave none.
func (c *conn) runUsage(r *http.Request, det *report.Detail) (*report.RunUsage, error) {
	u, err := c.rep.JobUsage(r.Context(), &det.Job)
	if err != nil || u == nil {
		return nil, err
	}
	ru := report.UsageOf(*u, det)
	return &ru, nil
}
