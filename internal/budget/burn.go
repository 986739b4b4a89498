package budget

import (
	"fmt"
	"time"
)

// PaceDays is how far back the pace is read: the 7 whole days before
// today and today so far (less where the period began later).
const PaceDays = 7

// Day is one day's usage in the budget's unit; Start is the day's
// midnight in the site's zone.
type Day struct {
	Start time.Time
	Used  float64
}

// Point is the burn line at the end of one day of the period (the last
// at now): the usage so far and where an even burn would be.
type Point struct {
	Day         time.Time // the day's midnight
	Used, Ideal float64   // cumulative
}

// Burndown is one budget's period at now.
type Burndown struct {
	Budget Budget
	Period Period
	// Now is when it was computed, clipped to the period.
	Now time.Time
	// Used and Left are in the budget's unit; Left is negative past the
	// amount. Ratio is Used / Amount.
	Used, Left, Ratio float64
	// Elapsed is the share of the period gone, 0 to 1.
	Elapsed float64
	// Pace is the usage per day over the last PaceDays days.
	Pace float64
	// RunOut is when the budget runs out (ran out, when Used reached
	// the amount) at that pace; zero when not before the period ends.
	RunOut time.Time
	// DaysLeft is the days from Now to RunOut, or to the period's end
	// when it does not run out before.
	DaysLeft float64
	// Line is the burn line, one point per day from the period's start.
	Line []Point
	// Users are who used the budget in the period so far, sorted: its
	// team's members whom its warnings go to (report.Ledger.Burns fills
	// it).
	Users []string
}

// RunsOut reports whether the budget runs out (or ran out) before its
// period ends.
func (bd Burndown) RunsOut() bool { return !bd.RunOut.IsZero() }

// Burn computes the burn-down of b over p at now from days (any order;
// days outside the period are left out).
func Burn(b Budget, p Period, now time.Time, days []Day) Burndown {
	loc := p.Start.Location()
	now = now.In(loc)
	if now.Before(p.Start) {
		now = p.Start
	}
	if now.After(p.End) {
		now = p.End
	}
	bd := Burndown{Budget: b, Period: p, Now: now}
	byDay := map[int64]float64{}
	for _, d := range days {
		if !d.Start.Before(p.Start) && d.Start.Before(p.End) {
			byDay[d.Start.Unix()] += d.Used
		}
	}
	total := p.End.Sub(p.Start).Seconds()
	bd.Elapsed = now.Sub(p.Start).Seconds() / total

	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	paceFrom := today.AddDate(0, 0, -PaceDays)
	if paceFrom.Before(p.Start) {
		paceFrom = p.Start
	}
	var recent float64
	for d := p.Start; d.Before(now); d = d.AddDate(0, 0, 1) {
		used := byDay[d.Unix()]
		prev := bd.Used
		bd.Used += used
		if !d.Before(paceFrom) {
			recent += used
		}
		end := d.AddDate(0, 0, 1)
		if end.After(now) {
			end = now
		}
		if prev < b.Amount && bd.Used >= b.Amount {
			// ran out during this day: read the moment off an even burn
			// through it
			f := (b.Amount - prev) / used
			bd.RunOut = d.Add(time.Duration(f * float64(end.Sub(d))))
		}
		bd.Line = append(bd.Line, Point{Day: d, Used: bd.Used, Ideal: b.Amount * end.Sub(p.Start).Seconds() / total})
	}
	bd.Left = b.Amount - bd.Used
	bd.Ratio = bd.Used / b.Amount
	if secs := now.Sub(paceFrom).Seconds(); secs > 0 {
		bd.Pace = recent / secs * 86400
	}
	switch {
	case bd.RunsOut():
		bd.DaysLeft = 0
	case bd.Pace > 0 && bd.Left/bd.Pace*86400 < p.End.Sub(now).Seconds():
		bd.RunOut = now.Add(time.Duration(bd.Left / bd.Pace * 86400 * float64(time.Second)))
		bd.DaysLeft = bd.RunOut.Sub(now).Hours() / 24
	default:
		bd.DaysLeft = p.End.Sub(now).Hours() / 24
	}
	return bd
}

// Warning is a threshold the burn-down has crossed. Key is the same for
// the same budget, period and threshold, whenever it is computed: the
// notifier sends each key once.
type Warning struct {
	Key string
	// Percent is the share of the amount used; 0 for RunOut.
	Percent int
	// RunOut: the budget runs out before its period ends at its pace.
	RunOut bool
}

// Crossed lists the warnings due for bd: each percent reached, then
// (when runOut) the projected run-out before the period's end while the
// budget is not yet spent.
func Crossed(bd Burndown, percents []int, runOut bool) []Warning {
	var out []Warning
	for _, pc := range percents {
		if bd.Ratio*100 >= float64(pc) {
			out = append(out, Warning{Key: bd.key(fmt.Sprint(pc)), Percent: pc})
		}
	}
	if runOut && bd.RunsOut() && bd.Left > 0 {
		out = append(out, Warning{Key: bd.key("runout"), RunOut: true})
	}
	return out
}

// key is budget/<account>/<user>/<period start, UTC>/<what>.
func (bd Burndown) key(what string) string {
	return fmt.Sprintf("budget/%s/%s/%s/%s", bd.Budget.Account, bd.Budget.User, bd.Period.Start.UTC().Format("2006-01-02T15"), what)
}
