package web

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/budget"
	"github.com/aicloud/gpusuite/internal/plot"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// A team's budgets (docs/budgets.md): the page /team/NAME/budget, its
// JSON /api/v1/budget/NAME and the board's header line for a logged-in
// member. Under web.private_data a budget is its team's business: only
// admins, the team's leads (notify.digest.leads, or Slurm's coordinators
// of its accounts) and its members see it.

// maxBudgetDays bounds the days one budget's chart draws: a range of
// years is a mistake, and the chart has a pixel a day at most.
const maxBudgetDays = 800

// budgetCard is one budget on the page, formatted.
type budgetCard struct {
	ID, Name, Period, From, To, Unit string
	Amount, Used, Left, UsedPct      string
	ElapsedPct, Pace, RunOut, Slurm  string
	Over, RunsOut, RanOut            bool
	Chart                            chart
}

type budgetPage struct {
	base
	Team, API string
	Budgets   []budgetCard
}

// budgetDoc is /api/v1/budget/NAME.
type budgetDoc struct {
	Team    string       `json:"team"`
	Budgets []budgetJSON `json:"budgets"`
}

type budgetJSON struct {
	Account string  `json:"account"`
	User    string  `json:"user,omitempty"`
	Period  string  `json:"period"`
	Start   string  `json:"start"`
	End     string  `json:"end"`
	Unit    string  `json:"unit"`
	Amount  float64 `json:"amount"`
	Used    float64 `json:"used"`
	Left    float64 `json:"left"`
	// UsedRatio is Used/Amount; ElapsedRatio the share of the period gone.
	UsedRatio    float64 `json:"used_ratio"`
	ElapsedRatio float64 `json:"elapsed_ratio"`
	PacePerDay   float64 `json:"pace_per_day"`
	// RunOut is the day the budget runs out at the last 7 days' pace;
	// absent: not before the period ends.
	RunOut *string     `json:"run_out,omitempty"`
	Days   []budgetDay `json:"days"`
	// Slurm is the association's GrpTRESMins and Slurm's usage of it, in
	// the budget's unit; absent where Slurm has none.
	Slurm *slurmJSON `json:"slurm,omitempty"`
}

type budgetDay struct {
	Day   string   `json:"day"`
	Used  *float64 `json:"used,omitempty"` // summed to the day's end; absent: to come
	Ideal float64  `json:"ideal"`
}

type slurmJSON struct {
	Limit float64 `json:"limit"`
	Used  float64 `json:"used"`
}

// mayBudget reports whether h's viewer may see team's budget: everyone
// without web.private_data; with it admins, the team's leads and its
// members (viewerTeams).
func (h *Handler) mayBudget(ctx context.Context, c *conn, team string) (bool, error) {
	mine, err := h.viewerTeams(ctx, c)
	return mine == nil || slices.Contains(mine, team), err
}

// viewerTeams are the teams whose budgets h's viewer may see under
// web.private_data: those the viewer leads (notify.digest.leads), is
// a member of (teamsOfUser) or whose accounts they coordinate in Slurm
// (as they see those accounts' users); nil for every team (no private
// data, or an admin).
func (h *Handler) viewerTeams(ctx context.Context, c *conn) ([]string, error) {
	if !h.v.private {
		return nil, nil
	}
	out, err := h.userTeams(ctx, c, h.v.name)
	if err != nil {
		return nil, err
	}
	for _, a := range h.v.roles.Accounts(h.v.name) {
		if t := h.mapping.Team(a, ""); t != teams.Unassigned && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out, nil
}

// userTeams are the teams user leads or is a member of, sorted; never
// nil.
func (h *Handler) userTeams(ctx context.Context, c *conn, user string) ([]string, error) {
	out, err := h.teamsOfUser(ctx, c, user)
	if err != nil {
		return nil, err
	}
	out = append([]string{}, out...)
	for team, leads := range h.o.Leads {
		if slices.Contains(leads, user) && !slices.Contains(out, team) {
			out = append(out, team)
		}
	}
	slices.Sort(out)
	return out, nil
}

// teamsOfUser is the teams user charges: the mapping file's when it
// places the user, else those of the accounts the user charged in the
// last year.
func (h *Handler) teamsOfUser(ctx context.Context, c *conn, user string) ([]string, error) {
	if h.mapping.Mapped() {
		if t := h.mapping.Team("", user); t != teams.Unassigned {
			return []string{t}, nil
		}
	}
	now := h.o.Now()
	w := report.HourWindow(timespec.Window{Start: now.AddDate(-1, 0, 0), End: now})
	t, err := c.rep.Report(ctx, report.Request{Kind: "teams", Window: w,
		Filter: report.Filter{Users: []string{user}}, Mapping: h.mapping})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, row := range rowsOf(t) {
		if !slices.Contains(out, row.Name) {
			out = append(out, row.Name)
		}
	}
	return out, nil
}

// budgetsOf reads team's budgets, refusing a viewer who may not see
// them before reading any.
func (h *Handler) budgetsOf(ctx context.Context, c *conn, team string) ([]budgetJSON, error) {
	ok, err := h.mayBudget(ctx, c, team)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &httpError{code: http.StatusForbidden, msg: "web.private_data: only the team's members, its leads and admins see its budget"}
	}
	return h.burnsOf(ctx, c, team)
}

func (h *Handler) budgetPage(w http.ResponseWriter, r *http.Request) error {
	team := r.PathValue("team")
	v := budgetPage{base: h.base(r, nil, "Budget of "+team), Team: team, API: "/api/v1/budget/" + url.PathEscape(team)}
	v.Crumbs = []link{{Name: "Accounting", URL: "/accounting"}, {Name: team, URL: teamPath(team)}}
	v.CLI = "gpuacct report budget --account " + shellQuote(team)
	err := h.withConn(r, func(c *conn) error {
		ctx := r.Context()
		if err := h.ingestState(ctx, c, &v.base); err != nil {
			return err
		}
		_, colors, err := h.teamsOf(ctx, c)
		if err != nil {
			return err
		}
		bs, err := h.budgetsOf(ctx, c, team)
		if err != nil {
			return err
		}
		for i, b := range bs {
			v.Budgets = append(v.Budgets, h.budgetCard(i, b, plot.TeamColor(colors, team)))
		}
		return nil
	})
	if err != nil {
		return err
	}
	h.render(w, http.StatusOK, "budget", &v)
	return nil
}

func (h *Handler) apiBudget(w http.ResponseWriter, r *http.Request) error {
	team := r.PathValue("team")
	d := budgetDoc{Team: team, Budgets: []budgetJSON{}}
	err := h.withConn(r, func(c *conn) error {
		bs, err := h.budgetsOf(r.Context(), c, team)
		if err != nil {
			return err
		}
		if bs != nil {
			d.Budgets = bs
		}
		return nil
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, &d)
	return nil
}

// amountOf is a budget's amount as configured: 1,000, not 1,000.0.
func amountOf(v float64) string {
	if v == math.Trunc(v) {
		return thousands(v, 0)
	}
	return hoursOf(v)
}

// unitName is how the page writes a budget's unit.
func unitName(u string) string {
	if u == "billing" {
		return "billing-h"
	}
	return "GPU-h"
}

func (h *Handler) budgetCard(i int, b budgetJSON, color string) budgetCard {
	unit := unitName(b.Unit)
	name := b.Account
	if b.User != "" {
		name += "/" + h.v.user(b.User)
	}
	c := budgetCard{ID: fmt.Sprint(i + 1), Name: name, Period: b.Period, From: b.Start, To: b.End, Unit: unit,
		Amount: amountOf(b.Amount), Used: hoursOf(b.Used), Left: hoursOf(b.Left), UsedPct: thousands(100*b.UsedRatio, 1),
		ElapsedPct: thousands(100*b.ElapsedRatio, 1), Pace: hoursOf(b.PacePerDay), RunOut: "not this period",
		Over: b.Used >= b.Amount}
	if b.RunOut != nil {
		c.RunOut, c.RunsOut, c.RanOut = *b.RunOut, true, b.Left <= 0
	}
	if sl := b.Slurm; sl != nil {
		stops := "jobs stop at Slurm's limit, before this budget runs out"
		if sl.Limit >= b.Amount {
			stops = "this budget runs out first, but only warns: jobs stop at Slurm's limit"
		}
		c.Slurm = fmt.Sprintf("Slurm's GrpTRESMins on %s: %s of %s %s used by Slurm's count; %s.", name, hoursOf(sl.Used), amountOf(sl.Limit), unit, stops)
	}
	days := make([]string, 0, len(b.Days))
	var used []float64
	for _, d := range b.Days {
		days = append(days, d.Day)
		if d.Used != nil {
			used = append(used, *d.Used)
		}
	}
	c.Chart = burnChart(fmt.Sprintf("Budget of %s, %s: used against the ideal line", name, b.Period), unit, days, used, b.Amount, b.ElapsedRatio, color)
	return c
}

// budgetHead is the board header's line on budgets; Bad: one runs out
// this period.
type budgetHead struct {
	Text string
	Bad  bool
}

// budgetLink is the line and the budget page it links to.
type budgetLink struct {
	Name budgetHead
	URL  string
}

// viewerBudget is the board's header line for the logged-in user's
// teams: "vision: 62 % of 1,000 GPU-h used, runs out 2026-12-20", linking
// to the first team's budget page; none when no one logged in, the
// user's teams have no budget, or the ledger cannot tell (the board
// never fails for it).
func (h *Handler) viewerBudget(r *http.Request) (line budgetLink) {
	name, ok := h.who(r)
	if !ok || len(h.o.Budgets) == 0 {
		return line
	}
	// The board's page waits for this line no longer than this.
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	err := h.withLiveConn(r.WithContext(ctx), func(c *conn) error {
		mine, err := h.userTeams(ctx, c, name)
		if err != nil {
			return err
		}
		var parts []string
		for _, team := range mine {
			bs, err := h.burnsOf(ctx, c, team)
			if err != nil {
				return err
			}
			for _, b := range bs {
				if b.User != "" && b.User != name {
					continue
				}
				line.Name.Bad = line.Name.Bad || b.RunOut != nil
				parts = append(parts, b.summary())
				if line.URL == "" {
					line.URL = teamPath(team) + "/budget"
				}
			}
		}
		line.Name.Text = strings.Join(parts, " · ")
		return nil
	})
	if err != nil {
		h.o.Log.Warn("board: budget line", "user", name, "err", err)
		line.Name, line.URL = budgetHead{}, ""
	}
	return line
}

// dayOf is t's day in loc.
func dayOf(t time.Time, loc *time.Location) string { return t.In(loc).Format("2006-01-02") }

// burnsOf is team's budgets at now: those of the accounts the mapping
// places in team, each period's burn-down read off the ledger's days.
func (h *Handler) burnsOf(ctx context.Context, c *conn, team string) ([]budgetJSON, error) {
	var mine []budget.Budget
	for _, b := range h.o.Budgets {
		if h.mapping.Team(b.Account, "") == team {
			mine = append(mine, b)
		}
	}
	if len(mine) == 0 {
		return nil, nil
	}
	bds, err := c.rep.Burns(ctx, mine, h.o.Now(), h.o.Location, h.o.FiscalStart)
	if err != nil {
		return nil, err
	}
	ls := h.limits(ctx)
	out := make([]budgetJSON, 0, len(bds))
	for _, bd := range bds {
		j := h.budgetJSON(bd)
		if limit, used, ok := budget.SlurmFor(ls, bd.Budget); ok {
			j.Slurm = &slurmJSON{Limit: limit, Used: used}
		}
		out = append(out, j)
	}
	return out, nil
}

// budgetJSON is bd as the API writes it; the chart's days run to the
// period's end, used only up to now.
func (h *Handler) budgetJSON(bd budget.Burndown) budgetJSON {
	loc, b, p := h.o.Location, bd.Budget, bd.Period
	j := budgetJSON{Account: b.Account, User: h.v.user(b.User), Period: p.Label, Start: dayOf(p.Start, loc),
		End: dayOf(p.End.Add(-time.Second), loc), Unit: string(b.Unit), Amount: b.Amount, Used: bd.Used, Left: bd.Left,
		UsedRatio: bd.Ratio, ElapsedRatio: bd.Elapsed, PacePerDay: bd.Pace, Days: []budgetDay{}}
	if bd.RunsOut() {
		s := dayOf(bd.RunOut, loc)
		j.RunOut = &s
	}
	total := p.End.Sub(p.Start).Seconds()
	i := 0
	for d := p.Start; d.Before(p.End) && len(j.Days) < maxBudgetDays; d = d.AddDate(0, 0, 1) {
		end := d.AddDate(0, 0, 1)
		if end.After(p.End) {
			end = p.End
		}
		day := budgetDay{Day: dayOf(d, loc), Ideal: b.Amount * end.Sub(p.Start).Seconds() / total}
		if i < len(bd.Line) {
			u := bd.Line[i].Used
			day.Used = &u
			i++
		}
		j.Days = append(j.Days, day)
	}
	return j
}

// budgetColumn fills the overview's budget column: each team's budgets
// in force, "80 % of 100 GPU-h", to those who may see them. Without
// budgets the column is not there.
func (h *Handler) budgetColumn(ctx context.Context, c *conn, b *base, rows []teamRow) error {
	if len(h.o.Budgets) == 0 {
		return nil
	}
	b.BudgetCol = true
	mine, err := h.viewerTeams(ctx, c)
	if err != nil {
		return err
	}
	for i := range rows {
		bs, err := h.accountBudgets(ctx, c, rows[i].Name, mine)
		if err != nil {
			return err
		}
		if len(bs) == 0 {
			continue
		}
		var parts []string
		for _, bj := range bs {
			parts = append(parts, bj.share())
		}
		rows[i].Budget, rows[i].BudgetURL = strings.Join(parts, ", "), teamPath(rows[i].Name)+"/budget"
	}
	return nil
}

// teamBudgetLink puts a team's budgets in its page's header, linking
// to the budget page, when it has budgets its viewer may see.
func (h *Handler) teamBudgetLink(ctx context.Context, c *conn, team string, b *base) error {
	if len(h.o.Budgets) == 0 {
		return nil
	}
	mine, err := h.viewerTeams(ctx, c)
	if err != nil {
		return err
	}
	bs, err := h.accountBudgets(ctx, c, team, mine)
	if err != nil || len(bs) == 0 {
		return err
	}
	var parts []string
	for _, bj := range bs {
		parts = append(parts, bj.summary())
		b.Budget.Bad = b.Budget.Bad || bj.RunOut != nil
	}
	b.Budget.Text, b.BudgetURL = strings.Join(parts, " · "), teamPath(team)+"/budget"
	return nil
}

// accountBudgets are team's budgets of its accounts (not of its users)
// when mine, the teams the viewer may see (viewerTeams), holds it.
func (h *Handler) accountBudgets(ctx context.Context, c *conn, team string, mine []string) ([]budgetJSON, error) {
	if mine != nil && !slices.Contains(mine, team) {
		return nil, nil
	}
	bs, err := h.burnsOf(ctx, c, team)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(bs, func(b budgetJSON) bool { return b.User != "" }), nil
}

// share is "80 % of 100 GPU-h".
func (b budgetJSON) share() string {
	return fmt.Sprintf("%s %% of %s %s", thousands(100*b.UsedRatio, 0), amountOf(b.Amount), unitName(b.Unit))
}

// summary is "vision: 80 % of 100 GPU-h used, runs out 2026-11-28"
// (account/user for a user's budget; "ran out" once it has).
func (b budgetJSON) summary() string {
	name := b.Account
	if b.User != "" {
		name += "/" + b.User
	}
	s := name + ": " + b.share() + " used"
	switch {
	case b.RunOut != nil && b.Left <= 0:
		s += ", ran out " + *b.RunOut
	case b.RunOut != nil:
		s += ", runs out " + *b.RunOut
	}
	return s
}
