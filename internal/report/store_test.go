package report

import (
	"context"

	"github.com/aicloud/gpusuite/internal/store"
)

func openWriter(path string) (*store.Store, error) {
	return store.Open(context.Background(), store.Options{Path: path})
}
