package slurmstate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// zone is slurmctld's zone in the tests, not the machine's.
var zone = time.FixedZone("CET", 3600)

func at(s string) time.Time {
	t, err := time.ParseInLocation(scontrolTime, s, zone)
	if err != nil {
		panic(err)
	}
	return t
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func h100(count, used int) []GPU { return []GPU{{Type: "h100", Count: count, Used: used}} }

// TestParseNodesFixture: a Slurm 22.05 cluster in every state the board
// shows: idle, mixed with GresUsed, allocated, drained and draining with
// their reasons (one holding "="), down and not responding, two GPU
// types, an untyped gpu:4, a node without GPUs.
func TestParseNodesFixture(t *testing.T) {
	got, err := ParseNodes(fixture(t, "nodes-22.05.txt"), zone)
	if err != nil {
		t.Fatal(err)
	}
	parts := []string{"gpu", "long"}
	want := []Node{
		{Name: "gpu01", State: "IDLE", Base: "IDLE", Condition: Idle, Partitions: parts,
			CPUs: 128, GPUs: h100(8, 0), GPUCount: 8},
		{Name: "gpu02", State: "MIXED", Base: "MIXED", Condition: Mixed, Partitions: parts,
			CPUs: 128, CPUsAlloc: 48, GPUs: h100(8, 3), GPUCount: 8, GPUsUsed: 3},
		{Name: "gpu03", State: "ALLOCATED", Base: "ALLOCATED", Condition: Allocated, Partitions: parts,
			CPUs: 128, CPUsAlloc: 128, GPUs: h100(8, 8), GPUCount: 8, GPUsUsed: 8},
		{Name: "gpu04", State: "IDLE+DRAIN", Base: "IDLE", Flags: []string{"DRAIN"}, Condition: Drained,
			Reason: "GPU 5 xid=79 fell off the bus", ReasonUser: "root", ReasonTime: at("2026-11-25T17:05:00"),
			Partitions: parts, CPUs: 128, GPUs: h100(8, 0), GPUCount: 8},
		{Name: "gpu05", State: "MIXED+DRAIN", Base: "MIXED", Flags: []string{"DRAIN"}, Condition: Draining,
			Reason: "kernel update", ReasonUser: "alice", ReasonTime: at("2026-11-26T09:35:12"),
			Partitions: []string{"gpu"}, CPUs: 128, CPUsAlloc: 64, GPUs: h100(8, 4), GPUCount: 8, GPUsUsed: 4},
		{Name: "gpu06", State: "DOWN+NOT_RESPONDING", Base: "DOWN", Flags: []string{"NOT_RESPONDING"},
			Condition: Down, NotResponding: true,
			Reason: "Not responding", ReasonUser: "slurm", ReasonTime: at("2026-11-24T02:10:31"),
			Partitions: parts, CPUs: 128, GPUs: h100(8, 0), GPUCount: 8},
		{Name: "dgx01", State: "MIXED", Base: "MIXED", Condition: Mixed, Partitions: []string{"dgx"},
			CPUs: 256, CPUsAlloc: 16, GPUs: []GPU{{Type: "a100", Count: 4, Used: 0}, {Type: "h100", Count: 4, Used: 2}},
			GPUCount: 8, GPUsUsed: 2},
		{Name: "node1", State: "IDLE", Base: "IDLE", Condition: Idle, Partitions: []string{"gpu"},
			CPUs: 16, GPUs: []GPU{{Count: 4}}, GPUCount: 4},
		{Name: "login1", State: "IDLE+DRAIN+NOT_RESPONDING", Base: "IDLE", Flags: []string{"DRAIN", "NOT_RESPONDING"},
			Condition: Drained, NotResponding: true, Reason: "maintenance", Partitions: []string{"cpu"}, CPUs: 16},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ParseNodes (-want +got):\n%s", d)
	}
}

// TestParseNodesMultiline: scontrol without --oneliner prints a node over
// indented lines; they read the same.
func TestParseNodesMultiline(t *testing.T) {
	got, err := ParseNodes(fixture(t, "nodes-multiline.txt"), zone)
	if err != nil {
		t.Fatal(err)
	}
	want := []Node{
		{Name: "gpu04", State: "IDLE+DRAIN", Base: "IDLE", Flags: []string{"DRAIN"}, Condition: Drained,
			Reason: "GPU 5 xid=79 fell off the bus", ReasonUser: "root", ReasonTime: at("2026-11-25T17:05:00"),
			Partitions: []string{"gpu", "long"}, CPUs: 128, GPUs: h100(8, 0), GPUCount: 8},
		{Name: "node1", State: "MIXED", Base: "MIXED", Condition: Mixed, Partitions: []string{"gpu"},
			CPUs: 16, CPUsAlloc: 4, GPUs: []GPU{{Count: 4, Used: 2}}, GPUCount: 4, GPUsUsed: 2},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ParseNodes (-want +got):\n%s", d)
	}
}

// TestNodeCases: one field at a time, what the board depends on.
func TestNodeCases(t *testing.T) {
	cases := []struct {
		name, line string
		check      func(Node) any
		want       any
	}{
		{"draining when allocated", "NodeName=a State=ALLOCATED+DRAIN",
			func(n Node) any { return n.Condition }, Draining},
		{"draining when completing", "NodeName=a State=IDLE+COMPLETING+DRAIN",
			func(n Node) any { return n.Condition }, Draining},
		{"sinfo's DRAINING word", "NodeName=a State=DRAINING",
			func(n Node) any { return n.Condition }, Draining},
		{"other base states lower-cased", "NodeName=a State=FUTURE",
			func(n Node) any { return n.Condition }, Condition("future")},
		{"idle not responding", "NodeName=a State=IDLE+NOT_RESPONDING",
			func(n Node) any { return []any{n.Condition, n.NotResponding} }, []any{Idle, true}},
		{"untyped count", "NodeName=a State=IDLE Gres=gpu:4",
			func(n Node) any { return n.GPUs }, []GPU{{Count: 4}}},
		{"type without count is one", "NodeName=a State=IDLE Gres=gpu:t4",
			func(n Node) any { return n.GPUs }, []GPU{{Type: "t4", Count: 1}}},
		{"other gres skipped", "NodeName=a State=IDLE Gres=shard:h100:32,gpu:h100:8(S:0-1),nvme:2",
			func(n Node) any { return n.GPUs }, h100(8, 0)},
		{"GresUsed index list with commas", "NodeName=a State=MIXED Gres=gpu:h100:8(S:0-1) GresUsed=gpu:h100:3(IDX:0,2-3)",
			func(n Node) any { return n.GPUsUsed }, 3},
		{"GresUsed wins over AllocTRES", "NodeName=a State=MIXED Gres=gpu:4 GresUsed=gpu:1 AllocTRES=gres/gpu=2",
			func(n Node) any { return n.GPUsUsed }, 1},
		{"untyped use of two types is unknown per type",
			"NodeName=a State=MIXED Gres=gpu:a100:4,gpu:h100:4 AllocTRES=cpu=2,gres/gpu=3",
			func(n Node) any { return []any{n.GPUs, n.GPUsUsed} },
			[]any{[]GPU{{Type: "a100", Count: 4, Used: -1}, {Type: "h100", Count: 4, Used: -1}}, 3}},
		{"CfgTRES when Gres is null", "NodeName=a State=IDLE Gres=(null) CfgTRES=cpu=8,gres/gpu:l4=2",
			func(n Node) any { return n.GPUs }, []GPU{{Type: "l4", Count: 2}}},
		{"reason without bracket", "NodeName=a State=DOWN Reason=power cut",
			func(n Node) any { return []any{n.Reason, n.ReasonUser} }, []any{"power cut", ""}},
		{"reason text before a later field", "NodeName=a State=DOWN Reason=x [root@2026-01-02T03:04:05] Comment=later",
			func(n Node) any { return []any{n.Reason, n.ReasonTime} }, []any{"x", at("2026-01-02T03:04:05")}},
		{"no partitions", "NodeName=a State=IDLE Partitions=(null)",
			func(n Node) any { return n.Partitions }, []string(nil)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			nodes, err := ParseNodes([]byte(c.line), zone)
			if err != nil {
				t.Fatal(err)
			}
			if len(nodes) != 1 {
				t.Fatalf("got %d nodes, want 1", len(nodes))
			}
			if d := cmp.Diff(c.want, c.check(nodes[0])); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestParseNodesErrors: garbage says what is wrong, with its line.
func TestParseNodesErrors(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"not scontrol", "hello world", `"hello" comes before any Key=value field`},
		{"wrong object", "ReservationName=x StartTime=now", "want NodeName="},
		{"no state", "NodeName=a CPUTot=4", "node a has no State="},
		{"bad count", "NodeName=a State=IDLE CPUTot=many", `CPUTot="many" is not a count`},
		{"bad gres count", "NodeName=a State=IDLE Gres=gpu:h100:lots", `count "lots"`},
		{"huge gres count", "NodeName=a State=IDLE Gres=gpu:h100:99999999999", "is not a number from 0 to 65536"},
		{"bad gres shape", "NodeName=a State=IDLE Gres=gpu:a:b:c", "is not gpu[:type][:count]"},
		{"unclosed paren", "NodeName=a State=IDLE Gres=gpu:h100:8(S:0-1", "unclosed"},
		{"bad reason time", "NodeName=a State=DOWN Reason=x [root@yesterday]", "line 1: node a: reason"},
		{"second line", "NodeName=a State=IDLE\nNodeName=b", "line 2: node b has no State="},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseNodes([]byte(c.in), zone)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestParseNodesEmpty: a cluster with no nodes is no error.
func TestParseNodesEmpty(t *testing.T) {
	got, err := ParseNodes([]byte("\n"), zone)
	if err != nil || len(got) != 0 {
		t.Fatalf("got %v, %v; want no nodes, no error", got, err)
	}
}

// TestParseNodesIndentedFirstLine: an indented line with nothing above
// it starts a record, and an error names its line.
func TestParseNodesIndentedFirstLine(t *testing.T) {
	_, err := ParseNodes([]byte("\n   State=IDLE"), zone)
	if err == nil || !strings.Contains(err.Error(), "line 2: record starts with State=") {
		t.Fatalf("error %v, want line 2 named", err)
	}
}

// TestParseNodesHarness: the test harness's own Slurm 22.05.8 printed
// this with a job holding all four GPUs: no GresUsed in that version,
// the use comes from AllocTRES.
func TestParseNodesHarness(t *testing.T) {
	got, err := ParseNodes(fixture(t, "nodes-harness-22.05.8.txt"), zone)
	if err != nil {
		t.Fatal(err)
	}
	want := []Node{{Name: "node1", State: "MIXED", Base: "MIXED", Condition: Mixed, Partitions: []string{"gpu"},
		CPUs: 16, CPUsAlloc: 1, GPUs: []GPU{{Count: 4, Used: 4}}, GPUCount: 4, GPUsUsed: 4}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ParseNodes (-want +got):\n%s", d)
	}
}
