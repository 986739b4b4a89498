package ingest

import "context"

// fillClusterFacts stores the cluster's GPU capacity, node events and
// reservations.
func (in *Ingester) fillClusterFacts(ctx context.Context) {}
