package record

import "testing"

// TestParseMIGProfile: a GPU instance's profile, a compute instance's,
// "+me"; a whole GPU's type and malformed names are not profiles.
func TestParseMIGProfile(t *testing.T) {
	for _, tc := range []struct {
		name string
		want MIGProfile
		ok   bool
	}{
		{"1g.10gb", MIGProfile{Slices: 1, GB: 10}, true},
		{"7g.141gb", MIGProfile{Slices: 7, GB: 141}, true},
		{"1g.10gb+me", MIGProfile{Slices: 1, GB: 10}, true},
		{"1c.3g.40gb", MIGProfile{Slices: 3, GB: 40, Compute: 1}, true},
		{"a100", MIGProfile{}, false},
		{"", MIGProfile{}, false},
		{"xg.10gb", MIGProfile{}, false},
		{"8g.80gb", MIGProfile{}, false},
		{"10g.10gb", MIGProfile{}, false},
		{"1g.gb", MIGProfile{}, false},
		{"1g.10", MIGProfile{}, false},
		{"xc.3g.40gb", MIGProfile{}, false},
	} {
		got, ok := ParseMIGProfile(tc.name)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseMIGProfile(%q) = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct{ model, want string }{
		{"NVIDIA A100-SXM4-80GB MIG 1g.10gb", "1g.10gb"},
		{"NVIDIA A100-SXM4-80GB", ""},
	} {
		got, ok := MIGProfileName(tc.model)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("MIGProfileName(%q) = %q, %v; want %q", tc.model, got, ok, tc.want)
		}
	}
}
