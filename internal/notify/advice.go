package notify

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/store"
)

// Bounds of the advice in a digest pass.
const (
	// maxAdviceReads bounds the runs whose GPUs one digest pass reads
	// for advice; candidates past it go unadvised that week.
	maxAdviceReads = 2000
	// adviceListed bounds the runs one digest advises on per kind.
	adviceListed = 5
	// migMargin: a run's memory peak must stay under this share of the
	// slice's nominal memory (a slice offers a little less than its name).
	migMargin = 0.9
)

// Kinds of advice.
const (
	AdviceMIG       = "mig"
	AdviceSlice     = "slice"
	AdviceOneGPU    = "onegpu"
	AdviceTimeLimit = "timelimit"
)

// Advice is one suggestion in a user's digest.
type Advice struct {
	Kind    string
	Job     string
	Cluster string
	GPUs    int64
	// MIG: the run's GPU memory peak, utilization, and the slice; Slice
	// too: Model is then the slice the run held, Slice the smaller one.
	PeakMiB, UtilPct float64
	Model, Slice     string
	// OneGPU: how many GPUs were idle at least IdlePct of their time.
	IdleGPUs int
	IdlePct  float64
	// TimeLimit: Runs of Of runs asked for over Ratio times their
	// elapsed time; Elapsed and Limit are their medians.
	Runs, Of       int
	Ratio          float64
	Elapsed, Limit time.Duration
}

// migSlice is a MIG profile of a GPU: its name and what it says.
type migSlice struct {
	name string
	record.MIGProfile
}

// sliceOf is the profile named name (one of migModels').
func sliceOf(name string) migSlice {
	p, _ := record.ParseMIGProfile(name)
	return migSlice{name, p}
}

// migModel is the MIG profiles of a GPU model: each slice count's
// standard GPU-instance profile, smallest first; the last is the whole
// GPU's.
type migModel struct {
	model    string // a substring of the GPU's model name
	minMiB   float64
	profiles []string
}

// migModels are the MIG profiles of the GPUs that have MIG, by model and
// memory, from NVIDIA's MIG User Guide ("Supported MIG Profiles": A100
// 40/80GB, H100 80/94GB, H200 141GB, A30); the first match wins. The
// variants with double memory (1g.20gb) or media engines (+me) are left
// out: advice names the plain profile of each size.
var migModels = []migModel{
	{"H200", 0, []string{"1g.18gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"}},
	{"H100", 90_000, []string{"1g.12gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"}},
	{"H100", 0, []string{"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
	{"H800", 0, []string{"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
	{"A100", 70_000, []string{"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
	{"A100", 0, []string{"1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}},
	{"A800", 70_000, []string{"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
	{"A30", 0, []string{"1g.6gb", "2g.12gb", "4g.24gb"}},
}

// smallestSlice is the smallest MIG slice of a GPU of model with
// totalMiB of memory; ok false: the GPU has no MIG.
func smallestSlice(model string, totalMiB float64) (migSlice, bool) {
	for _, m := range migModels {
		if strings.Contains(model, m.model) && totalMiB >= m.minMiB {
			return sliceOf(m.profiles[0]), true
		}
	}
	return migSlice{}, false
}

// fitsSlice says whether peakMiB of GPU memory stays within the slice
// with migMargin to spare.
func fitsSlice(s migSlice, peakMiB float64) bool {
	return peakMiB < float64(s.GB)*1000*1000*1000/(1<<20)*migMargin
}

// SliceFit is the smallest MIG profile, smaller than the GPU or slice a
// run held, that its GPU memory peak and utilization fit: memory by
// fitsSlice, and compute when the profile's slices are at least the
// run's utilization of what it held (20 % of a whole 7-slice GPU needs
// 2 slices). model is NVML's name: a whole GPU's ("NVIDIA A100-SXM4-80GB",
// with totalMiB its memory) or a MIG instance's ("... MIG 3g.40gb").
// ok false: no smaller profile fits, or the GPU has no MIG.
func SliceFit(model string, totalMiB, peakMiB, utilPct float64) (string, bool) {
	base, prof, isMIG := strings.Cut(model, " MIG ")
	for _, m := range migModels {
		if !strings.Contains(base, m.model) {
			continue
		}
		held := sliceOf(m.profiles[len(m.profiles)-1]).Slices
		if isMIG {
			prof = strings.TrimSpace(prof)
			if !slices.Contains(m.profiles, prof) {
				continue
			}
			held = sliceOf(prof).Slices
		} else if totalMiB < m.minMiB {
			continue
		}
		for _, name := range m.profiles {
			p := sliceOf(name)
			if p.Slices >= held {
				break
			}
			if fitsSlice(p, peakMiB) && float64(p.Slices) >= utilPct/100*float64(held) {
				return p.name, true
			}
		}
		return "", false
	}
	return "", false
}

// adviceRuns gathers a digest pass's runs for advice.
type adviceRuns struct {
	// gpus are the runs whose GPUs may warrant advice, by user.
	gpus map[string][]store.JobRow
	// rows are every run's ledger row, by user, for the time limits.
	rows map[string][]int64
}

// adviceAdd considers j (an ended run of the week) under the thresholds.
func (n *Notifier) adviceAdd(a *adviceRuns, j *store.JobRow) {
	a.rows[j.User] = append(a.rows[j.User], j.Row)
	if j.SampleS <= 0 || j.AllocS <= 0 {
		return
	}
	cfg := n.cfg.Digest.Advice
	util := 100 * j.UsedS / float64(j.AllocS)
	small := j.GPUs == 1 && util < cfg.SmallUtil
	// All but one idle: at least (GPUs-1)/GPUs of the GPU time idle.
	one := j.GPUs >= 2 && j.IdleS/float64(j.AllocS) >= float64(j.GPUs-1)/float64(j.GPUs)*cfg.OneGPUIdle/100
	if small || one {
		a.gpus[j.User] = append(a.gpus[j.User], *j)
	}
}

// advise fills each digest's Advice from a.
func (n *Notifier) advise(ctx context.Context, a *adviceRuns, byUser map[string]*UserDigest) error {
	reads := 0
	for _, u := range slices.Sorted(maps.Keys(a.gpus)) {
		d := byUser[u]
		runs := a.gpus[u]
		sort.Slice(runs, func(x, y int) bool { return runs[x].Row < runs[y].Row })
		for _, j := range runs {
			if reads >= maxAdviceReads {
				break
			}
			reads++
			gpus, err := n.st.JobGPUs(ctx, j.Row)
			if err != nil {
				return fmt.Errorf("advice on job %s: %w", j.ID(), err)
			}
			if ad, ok := n.gpuAdvice(j, gpus); ok && countKind(d.Advice, ad.Kind) < adviceListed {
				d.Advice = append(d.Advice, ad)
			}
		}
	}
	for _, u := range slices.Sorted(maps.Keys(a.rows)) {
		ad, ok, err := n.limitAdvice(ctx, a.rows[u])
		if err != nil {
			return fmt.Errorf("advice for %s: %w", u, err)
		}
		if ok {
			byUser[u].Advice = append(byUser[u].Advice, ad)
		}
	}
	return nil
}

func countKind(as []Advice, kind string) int {
	c := 0
	for _, a := range as {
		if a.Kind == kind {
			c++
		}
	}
	return c
}

// gpuAdvice is the advice j's GPUs give, if any.
func (n *Notifier) gpuAdvice(j store.JobRow, gpus []store.JobGPURow) (Advice, bool) {
	cfg := n.cfg.Digest.Advice
	ad := Advice{Job: j.ID(), Cluster: j.Cluster, GPUs: j.GPUs, UtilPct: 100 * j.UsedS / float64(j.AllocS)}
	if len(gpus) == 1 && j.GPUs == 1 {
		g := gpus[0]
		if prof, ok := record.MIGProfileName(g.Model); ok {
			return sliceAdvice(ad, g, prof)
		}
		if g.MemMaxMiB == nil || g.MemTotalMiB == nil || ad.UtilPct >= cfg.SmallUtil {
			return Advice{}, false
		}
		s, ok := smallestSlice(g.Model, *g.MemTotalMiB)
		if !ok || !fitsSlice(s, *g.MemMaxMiB) {
			return Advice{}, false
		}
		ad.Kind, ad.PeakMiB, ad.Model, ad.Slice = AdviceMIG, *g.MemMaxMiB, g.Model, s.name
		return ad, true
	}
	if len(gpus) < 2 || int64(len(gpus)) != j.GPUs {
		return Advice{}, false
	}
	idle, least := 0, 100.0
	for _, g := range gpus {
		if g.SampleS <= 0 {
			return Advice{}, false
		}
		if share := 100 * g.IdleS / g.SampleS; share >= cfg.OneGPUIdle {
			idle++
			least = min(least, share)
		}
	}
	if idle != len(gpus)-1 {
		return Advice{}, false
	}
	ad.Kind, ad.IdleGPUs, ad.IdlePct = AdviceOneGPU, idle, least
	return ad, true
}

// sliceAdvice is the advice on a run that held one MIG slice: a smaller
// one its memory peak and utilization fit. A slice's utilization is known
// only where NVML gives its activity (GPM): with none (or none above 0)
// there is no advice. prof is the slice's profile (3g.40gb).
func sliceAdvice(ad Advice, g store.JobGPURow, prof string) (Advice, bool) {
	if g.MemMaxMiB == nil || g.UtilMax == nil || *g.UtilMax <= 0 || g.SampleS <= 0 {
		return Advice{}, false
	}
	util := 100 * g.UtilS / g.SampleS
	s, ok := SliceFit(g.Model, 0, *g.MemMaxMiB, util)
	if !ok {
		return Advice{}, false
	}
	ad.Kind, ad.PeakMiB, ad.UtilPct, ad.Model, ad.Slice = AdviceSlice, *g.MemMaxMiB, util, prof, s
	return ad, true
}

// limitAdvice is the time-limit advice over a user's runs, if at least
// limit_runs of them asked for over limit_ratio times their elapsed time.
func (n *Notifier) limitAdvice(ctx context.Context, rows []int64) (Advice, bool, error) {
	cfg := n.cfg.Digest.Advice
	var elapsed, limits []time.Duration
	of := 0
	for chunk := range slices.Chunk(rows, store.MaxResourceRows) {
		us, err := n.st.Resources(ctx, chunk)
		if err != nil {
			return Advice{}, false, err
		}
		for _, u := range us {
			if !u.TimeLimit.Known || u.Elapsed <= 0 {
				continue
			}
			of++
			limit := time.Duration(u.TimeLimit.Value) * time.Second
			if float64(limit) > cfg.LimitRatio*float64(u.Elapsed) {
				elapsed, limits = append(elapsed, u.Elapsed), append(limits, limit)
			}
		}
	}
	if len(elapsed) < cfg.LimitRuns {
		return Advice{}, false, nil
	}
	return Advice{Kind: AdviceTimeLimit, Runs: len(elapsed), Of: of, Ratio: cfg.LimitRatio, Elapsed: median(elapsed), Limit: median(limits)}, true, nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	return s[len(s)/2]
}

// adviceText is the advice section in one language.
type adviceText struct {
	head, mig, slice, oneGPU, limit, footer string
}

var adviceTexts = map[string]adviceText{
	"en": {
		head: "\nAdvice from your week's jobs:\n",
		// job, cluster, peak GiB, util %, model, slice.
		mig: "  job %[1]s (%[2]s): used %.1[3]f GiB of GPU memory at most and %.1[4]f %% of the GPU's time;\n" +
			"    it would fit a MIG slice %[6]s of the %[5]s: ask for the slice, not the whole GPU.\n",
		// job, cluster, peak GiB, util %, slice held, smaller slice.
		slice: "  job %[1]s (%[2]s): used %.1[3]f GiB of GPU memory at most and %.1[4]f %% of its MIG slice %[5]s;\n" +
			"    it would fit the smaller slice %[6]s: ask for that one (--gres=gpu:%[6]s:1).\n",
		// job, cluster, GPUs, idle GPUs, idle %.
		oneGPU: "  job %[1]s (%[2]s): held %[3]d GPUs, but %[4]d of them were idle at least %.1[5]f %% of the time;\n" +
			"    it used one: ask for 1 GPU, or check that the job spreads over all of them.\n",
		// runs, of, ratio, median elapsed, median limit.
		limit: "  %[1]d of your %[2]d jobs ran under 1/%[3]g of their time limit (median: %[4]s used of %[5]s asked);\n" +
			"    a time limit closer to the run time (sbatch --time) lets Slurm start your jobs sooner.\n",
	},
	"ja": {
		head: "\nこの週のジョブからの助言:\n",
		mig: "  ジョブ %[1]s (%[2]s): GPU メモリは最大 %.1[3]f GiB、GPU 使用率は %.1[4]f %% でした。\n" +
			"    %[5]s の MIG スライス %[6]s に収まります: GPU 全体ではなくスライスを要求してください。\n",
		slice: "  ジョブ %[1]s (%[2]s): GPU メモリは最大 %.1[3]f GiB、MIG スライス %[5]s の使用率は %.1[4]f %% でした。\n" +
			"    より小さいスライス %[6]s に収まります: そちらを要求してください (--gres=gpu:%[6]s:1)。\n",
		oneGPU: "  ジョブ %[1]s (%[2]s): GPU を %[3]d 基確保しましたが、そのうち %[4]d 基は時間の %.1[5]f %% 以上アイドルでした。\n" +
			"    使ったのは 1 基です: GPU 1 基を要求するか、ジョブが全 GPU を使っているか確かめてください。\n",
		limit: "  %[2]d 件中 %[1]d 件のジョブが制限時間の 1/%[3]g 未満で終わりました (中央値: 要求 %[5]s に対し %[4]s)。\n" +
			"    制限時間 (sbatch --time) を実行時間に近づけると、ジョブが早く始まります。\n",
	},
}

// writeAdvice writes as in lang.
func writeAdvice(b *strings.Builder, as []Advice, lang string) {
	if len(as) == 0 {
		return
	}
	tx, lang := textIn(adviceTexts, lang)
	b.WriteString(tx.head)
	for _, a := range as {
		switch a.Kind {
		case AdviceMIG:
			fmt.Fprintf(b, tx.mig, a.Job, a.Cluster, a.PeakMiB/1024, a.UtilPct, a.Model, a.Slice)
		case AdviceSlice:
			fmt.Fprintf(b, tx.slice, a.Job, a.Cluster, a.PeakMiB/1024, a.UtilPct, a.Model, a.Slice)
		case AdviceOneGPU:
			fmt.Fprintf(b, tx.oneGPU, a.Job, a.Cluster, a.GPUs, a.IdleGPUs, a.IdlePct)
		case AdviceTimeLimit:
			fmt.Fprintf(b, tx.limit, a.Runs, a.Of, a.Ratio, duration(a.Elapsed, lang), duration(a.Limit, lang))
		}
	}
}
