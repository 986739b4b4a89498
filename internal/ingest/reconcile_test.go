package ingest

import "slices"

// reconcileCall says whether a fake sacct's args are reconcileTimes'
// batched call, the one that names the cluster (-M).
func reconcileCall(args []string) bool { return slices.Contains(args, "-M") }
