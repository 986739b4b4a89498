package slurmstate

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestParseReservationsFixture: a maintenance on a hostlist, an active
// course for accounts in a partition, an open-ended one for users.
func TestParseReservationsFixture(t *testing.T) {
	got, err := ParseReservations(fixture(t, "reservations-22.05.txt"), zone)
	if err != nil {
		t.Fatal(err)
	}
	want := []Reservation{
		{Name: "maint-nov", Start: at("2026-11-28T08:00:00"), End: at("2026-11-28T20:00:00"),
			NodeList: "gpu[01-03,05]", Nodes: []string{"gpu01", "gpu02", "gpu03", "gpu05"},
			Users: []string{"root"}, Flags: []string{"MAINT", "IGNORE_JOBS", "SPEC_NODES"}, State: "INACTIVE"},
		{Name: "course", Start: at("2026-11-26T09:00:00"), End: at("2026-11-26T17:00:00"),
			NodeList: "dgx01,gpu06", Nodes: []string{"dgx01", "gpu06"}, Partition: "gpu",
			Accounts: []string{"teaching", "team-a"}, Flags: []string{"SPEC_NODES"}, State: "ACTIVE"},
		{Name: "open-ended", Start: at("2026-11-26T06:00:00"),
			NodeList: "node1", Nodes: []string{"node1"}, Users: []string{"alice", "bob"},
			Flags: []string{"IGNORE_JOBS", "SPEC_NODES"}, State: "ACTIVE"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ParseReservations (-want +got):\n%s", d)
	}
}

// TestParseReservationsNone: scontrol's sentence for none is an empty
// list, not an error.
func TestParseReservationsNone(t *testing.T) {
	got, err := ParseReservations(fixture(t, "reservations-none.txt"), zone)
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || len(got) != 0 {
		t.Fatalf("got %#v, want an empty list", got)
	}
}

// TestParseReservationsZone: times are slurmctld's wall clock in the
// injected zone, not the machine's.
func TestParseReservationsZone(t *testing.T) {
	ny := time.FixedZone("EST", -5*3600)
	got, err := ParseReservations([]byte("ReservationName=r StartTime=2026-11-26T10:00:00 EndTime=None Nodes=a"), ny)
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 11, 26, 15, 0, 0, 0, time.UTC)
	if !got[0].Start.Equal(want) || !got[0].End.IsZero() {
		t.Errorf("start %v end %v, want %v and zero", got[0].Start, got[0].End, want)
	}
}

func TestParseReservationsErrors(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"node output", "NodeName=a State=IDLE", "want ReservationName="},
		{"bad start", "ReservationName=r StartTime=tomorrow", `reservation r: StartTime: time "tomorrow"`},
		{"bad end", "ReservationName=r StartTime=2026-11-26T10:00:00 EndTime=2026-13-01T00:00:00", "EndTime"},
		{"bad hostlist", "ReservationName=r StartTime=N/A Nodes=gpu[03-01]", "runs backwards"},
		{"huge hostlist", "ReservationName=r StartTime=N/A Nodes=gpu[1-999999999]", "expands to more than 100000 names"},
		{"garbage", "\x00\x01 ===", "comes before any Key=value field"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseReservations([]byte(c.in), zone)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestParseReservationsTotalBound: many reservations each under the
// per-list bound still cannot expand past the total.
func TestParseReservationsTotalBound(t *testing.T) {
	var b strings.Builder
	for i := 0; i < maxReservedNames/MaxHostlistNames+1; i++ {
		b.WriteString("ReservationName=r StartTime=N/A Nodes=n[1-100000]\n")
	}
	_, err := ParseReservations([]byte(b.String()), zone)
	if err == nil || !strings.Contains(err.Error(), "more than 1000000 nodes in all") {
		t.Fatalf("error %v, want the total bound", err)
	}
}
