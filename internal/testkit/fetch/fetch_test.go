package fetch

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// ended records a failure without ending the real test.
type ended struct {
	testing.TB
	msg string
}

func (e *ended) Helper() {}
func (e *ended) Fatalf(format string, args ...any) {
	e.msg = fmt.Sprintf(format, args...)
	panic(e)
}

func TestGet(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			fmt.Fprint(w, `{"n":3}`)
		case "/big":
			w.Write(make([]byte, MaxBytes+1))
		default:
			http.Error(w, "no such page", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	for _, tc := range []struct{ path, body, fail string }{
		{path: "/ok", body: `{"n":3}`},
		{path: "/big", fail: "body over"},
		{path: "/gone", fail: "404 Not Found"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			e := &ended{TB: t}
			var got []byte
			func() {
				defer func() {
					if r := recover(); r != nil && r != e {
						panic(r)
					}
				}()
				got = Get(e, srv.URL+tc.path)
			}()
			if string(got) != tc.body || !strings.Contains(e.msg, tc.fail) || (tc.fail == "") != (e.msg == "") {
				t.Errorf("got %q, failure %q; want %q, a failure with %q", got, e.msg, tc.body, tc.fail)
			}
		})
	}
	var doc struct{ N int }
	JSON(t, srv.URL+"/ok", &doc)
	if doc.N != 3 {
		t.Errorf("JSON decoded %+v, want N 3", doc)
	}
}
