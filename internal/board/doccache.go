package board

import "sync"

// maxCachedDocs bounds the documents a snapshot keeps: one per way of
// encoding it (with or without the last hour, per team mapping).
const maxCachedDocs = 4

// docCache is a snapshot's encoded documents. A board of 10,000 GPUs
// takes longer to encode than its readers ask for it: every reader of
// one build gets the bytes of the first.
type docCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

func newDocCache() *docCache { return &docCache{m: map[string][]byte{}} }

// Encoded returns what enc makes of s for key, made once per snapshot:
// askers at once wait for the one encoding. key must name everything enc
// depends on beyond s. A snapshot made by hand has no cache: enc runs
// each time. The bytes returned are shared and must not be changed.
func (s *Snapshot) Encoded(key string, enc func() ([]byte, error)) ([]byte, error) {
	if s.docs == nil {
		return enc()
	}
	s.docs.mu.Lock()
	defer s.docs.mu.Unlock()
	if b, ok := s.docs.m[key]; ok {
		return b, nil
	}
	b, err := enc()
	if err != nil {
		return nil, err
	}
	if len(s.docs.m) < maxCachedDocs {
		s.docs.m[key] = b
	}
	return b, nil
}
