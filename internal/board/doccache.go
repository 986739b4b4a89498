package board

import "sync"

// maxCachedDocs bounds the documents a snapshot keeps: one per way of
// encoding it (the web's status document with or without the last hour,
// per team mapping; its board fragment per language, with names or
// without).
const maxCachedDocs = 8

// docCache is a snapshot's encoded documents. A board of 10,000 GPUs
// takes longer to encode than its readers ask for it: every reader of
// one build gets the bytes of the first.
type docCache struct {
	mu sync.Mutex
	m  map[string]any
}

func newDocCache() *docCache { return &docCache{m: map[string]any{}} }

// Encoded returns what enc makes of s for key, made once per snapshot:
// askers at once wait for the one encoding. key must name everything enc
// depends on beyond s, and one key is always asked with one T (a T other
// than the one kept is made again, not kept). A snapshot made by hand has
// no cache: enc runs each time. What is returned is shared and must not
// be changed.
func Encoded[T any](s *Snapshot, key string, enc func() (T, error)) (T, error) {
	if s.docs == nil {
		return enc()
	}
	s.docs.mu.Lock()
	defer s.docs.mu.Unlock()
	if v, ok := s.docs.m[key].(T); ok {
		return v, nil
	}
	v, err := enc()
	if err != nil {
		return v, err
	}
	if _, kept := s.docs.m[key]; !kept && len(s.docs.m) < maxCachedDocs {
		s.docs.m[key] = v
	}
	return v, nil
}
