package config

import (
	"strings"
	"testing"
	"time"
)

func TestStoreURL(t *testing.T) {
	tests := []struct {
		name    string
		toml    string
		want    string // Location()
		wantErr string
	}{
		{name: "default is the SQLite file", toml: "", want: "/data/gpusuite/gpuacct.db"},
		{name: "postgres", toml: "[store]\nurl = \"postgres://gpusuite@db.example.org/gpusuite?sslmode=verify-full\"\n", want: "postgres://gpusuite@db.example.org/gpusuite?sslmode=verify-full"},
		{name: "postgresql", toml: "[store]\nurl = \"postgresql://db/acct\"\n", want: "postgresql://db/acct"},
		{name: "empty url keeps the file", toml: "[store]\npath = \"/srv/acct.db\"\nurl = \"\"\n", want: "/srv/acct.db"},
		{name: "other scheme", toml: "[store]\nurl = \"mysql://db/acct\"\n", wantErr: `line 2: key "store.url": must start with postgres:// or postgresql://`},
		{name: "a path", toml: "[store]\nurl = \"/data/acct.db\"\n", wantErr: `key "store.url"`},
		{name: "no scheme", toml: "[store]\nurl = \"db.example.org/acct\"\n", wantErr: `key "store.url"`},
		{name: "not a string", toml: "[store]\nurl = 5\n", wantErr: `"store.url"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			err := Parse([]byte(tt.toml), &cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Store.Location(); got != tt.want {
				t.Errorf("Location() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestStoreURLErrorHidesPassword: a mistyped scheme must not print the
// password the URL carries.
func TestStoreURLErrorHidesPassword(t *testing.T) {
	cfg := Default()
	err := Parse([]byte("[store]\nurl = \"postgress://gpusuite:s3cret@db/acct\"\n"), &cfg)
	if err == nil {
		t.Fatal("no error for a postgress:// URL")
	}
	if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %q: want one line without the password", err)
	}
}

// TestSeriesRetention: the folded series are kept at least as long as the
// samples they are folded from; 0 keeps them exactly as long.
func TestSeriesRetention(t *testing.T) {
	tests := []struct {
		name    string
		toml    string
		want    time.Duration // SeriesKept()
		wantErr string
	}{
		{name: "default: with the samples", toml: "", want: 720 * time.Hour},
		{name: "0 follows sample_retention", toml: "[store]\nsample_retention = \"48h\"\nseries_retention = \"0s\"\n", want: 48 * time.Hour},
		{name: "a year", toml: "[store]\nseries_retention = \"8760h\"\n", want: 8760 * time.Hour},
		{name: "equal", toml: "[store]\nsample_retention = \"48h\"\nseries_retention = \"48h\"\n", want: 48 * time.Hour},
		{name: "under the samples'", toml: "[store]\nseries_retention = \"24h\"\n", wantErr: `key "store.series_retention": 24h0m0s is under store.sample_retention (720h0m0s)`},
		{name: "negative", toml: "[store]\nseries_retention = \"-1h\"\n", wantErr: `key "store.series_retention"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			err := Parse([]byte(tt.toml), &cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Store.SeriesKept(); got != tt.want {
				t.Errorf("SeriesKept() = %s, want %s", got, tt.want)
			}
		})
	}
}
