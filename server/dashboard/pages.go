package dashboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
)

// chart is an inline SVG bar chart of finished attempts, drawn from the
// roll-ups: done (success) bars with the failures (failed and retry)
// stacked on top.
type chart struct {
	Title         string
	Width, Height int
	Bars          []bar
	Max           int64
}

type bar struct {
	X, W, Y, H, FY, FH int
	Label              string
}

const chartH = 80

func buildChart(title string, rows []driver.StatRow, from time.Time, step time.Duration, n int) chart {
	ok := make([]int64, n)
	bad := make([]int64, n)
	for _, r := range rows {
		i := int(r.Bucket.Sub(from) / step)
		if r.Bucket.Before(from) || i >= n {
			continue
		}
		switch r.Outcome {
		case driver.OutcomeSuccess:
			ok[i] += r.Count
		case driver.OutcomeFailed, driver.OutcomeRetry:
			bad[i] += r.Count
		}
	}
	c := chart{Title: title, Width: n * 8, Height: chartH}
	for i := range n {
		c.Max = max(c.Max, ok[i]+bad[i])
	}
	scale := func(v int64) int {
		if c.Max == 0 {
			return 0
		}
		return int(v * chartH / c.Max)
	}
	for i := range n {
		h, fh := scale(ok[i]), scale(bad[i])
		at := from.Add(time.Duration(i) * step).UTC().Format("15:04")
		c.Bars = append(c.Bars, bar{X: i * 8, W: 7, Y: chartH - h - fh, H: h, FY: chartH - fh, FH: fh,
			Label: fmt.Sprintf("%s: %d done, %d failed", at, ok[i], bad[i])})
	}
	return c
}

func (d *Dashboard) overview(w http.ResponseWriter, r *http.Request, v *view) {
	ctx := r.Context()
	st, err := d.c.Stats(ctx)
	if err != nil {
		d.fail(w, err)
		return
	}
	now, err := d.d.Now(ctx)
	if err != nil {
		d.fail(w, err)
		return
	}
	day := now.Add(-24 * time.Hour).Truncate(time.Hour).Add(time.Hour)
	rows, err := d.d.ReadStats(ctx, driver.ReadStatsParams{Since: day})
	if err != nil {
		d.fail(w, err)
		return
	}
	hour := now.Truncate(time.Minute).Add(-59 * time.Minute)
	v.Title, v.Nav = "Overview", "overview"
	v.Data = map[string]any{
		"Queues": st,
		"Hour":   buildChart("Last hour, per minute", rows, hour, time.Minute, 60),
		"Day":    buildChart("Last day, per hour", rows, day, time.Hour, 24),
	}
	d.render(w, "overview", v)
}

const pageSize = 50

func (d *Dashboard) jobs(w http.ResponseWriter, r *http.Request, v *view) {
	q := r.URL.Query()
	after, _ := strconv.ParseInt(q.Get("after"), 10, 64)
	p := sluice.ListParams{Status: driver.Status(q.Get("status")), Type: q.Get("type"), Queue: q.Get("queue"), KeyPrefix: q.Get("key"),
		AfterID: after, Limit: pageSize}
	list, err := d.c.Jobs(r.Context(), p)
	if err != nil {
		d.fail(w, err)
		return
	}
	var next string
	if len(list) == pageSize {
		nq := cloneQuery(q)
		nq.Set("after", strconv.FormatInt(list[len(list)-1].ID, 10))
		next = "/jobs?" + nq.Encode()
	}
	v.Title, v.Nav = "Jobs", "jobs"
	v.Data = map[string]any{"Jobs": list, "Filter": p, "Next": next,
		"Statuses": []driver.Status{"", driver.StatusPending, driver.StatusProcessing, driver.StatusSuccess, driver.StatusFailed, driver.StatusCancelled}}
	d.render(w, "jobs", v)
}

func (d *Dashboard) jobID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		http.Error(w, "job id: want a positive integer", http.StatusBadRequest)
		return 0, false
	}
	return id, true
}

func (d *Dashboard) job(w http.ResponseWriter, r *http.Request, v *view) {
	id, ok := d.jobID(w, r)
	if !ok {
		return
	}
	j, err := d.c.Job(r.Context(), id)
	if err != nil {
		d.fail(w, err)
		return
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, j.Payload, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(j.Payload)
	}
	v.Title, v.Nav = fmt.Sprintf("Job %d", j.ID), "jobs"
	v.Data = map[string]any{"Job": j, "Payload": pretty.String(),
		"CanRetry":  j.Status == driver.StatusFailed || j.Status == driver.StatusCancelled,
		"CanCancel": j.Status == driver.StatusPending || j.Status == driver.StatusFailed}
	d.render(w, "job", v)
}

func (d *Dashboard) retry(w http.ResponseWriter, r *http.Request, _ *view) {
	id, ok := d.jobID(w, r)
	if !ok {
		return
	}
	if err := d.c.Retry(r.Context(), id); err != nil {
		d.fail(w, err)
		return
	}
	back(w, r, fmt.Sprintf("/jobs/%d", id), "Job moved back to pending.")
}

func (d *Dashboard) cancel(w http.ResponseWriter, r *http.Request, _ *view) {
	id, ok := d.jobID(w, r)
	if !ok {
		return
	}
	if err := d.c.Cancel(r.Context(), id); err != nil {
		d.fail(w, err)
		return
	}
	back(w, r, fmt.Sprintf("/jobs/%d", id), "Job cancelled.")
}

// failedScan bounds the failed jobs read for grouping: the newest ones,
// through the failed-by-id index.
const failedScan = 1000

type failGroup struct {
	Type, Prefix string
	Count        int
	Latest       int64
	ids          []int64
}

// errorPrefix groups errors by their first line, cut short, so that ids
// and timestamps later in a message do not split a group.
func errorPrefix(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return driver.Truncate(strings.ToValidUTF8(s, "\uFFFD"), 80, false)
}

func (d *Dashboard) failGroups(r *http.Request) ([]*failGroup, int, error) {
	list, err := d.c.Jobs(r.Context(), sluice.ListParams{Status: driver.StatusFailed, Limit: failedScan})
	if err != nil {
		return nil, 0, err
	}
	by := map[[2]string]*failGroup{}
	var out []*failGroup
	for _, j := range list {
		k := [2]string{j.Type, errorPrefix(j.LastError)}
		g := by[k]
		if g == nil {
			g = &failGroup{Type: k[0], Prefix: k[1], Latest: j.ID}
			by[k] = g
			out = append(out, g)
		}
		g.Count++
		g.ids = append(g.ids, j.ID)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Count > out[j].Count })
	return out, len(list), nil
}

func (d *Dashboard) failed(w http.ResponseWriter, r *http.Request, v *view) {
	groups, n, err := d.failGroups(r)
	if err != nil {
		d.fail(w, err)
		return
	}
	v.Title, v.Nav = "Failed jobs", "failed"
	v.Data = map[string]any{"Groups": groups, "Scanned": n, "Capped": n == failedScan}
	d.render(w, "failed", v)
}

func (d *Dashboard) retryGroup(w http.ResponseWriter, r *http.Request, _ *view) {
	groups, _, err := d.failGroups(r)
	if err != nil {
		d.fail(w, err)
		return
	}
	typ, prefix := r.PostFormValue("type"), r.PostFormValue("prefix")
	moved := 0
	for _, g := range groups {
		if g.Type != typ || g.Prefix != prefix {
			continue
		}
		for _, id := range g.ids {
			// A job retried or purged since the listing is skipped.
			if err := d.c.Retry(r.Context(), id); err == nil {
				moved++
			}
		}
	}
	back(w, r, "/failed", fmt.Sprintf("%d jobs moved back to pending.", moved))
}

func (d *Dashboard) queues(w http.ResponseWriter, r *http.Request, v *view) {
	st, err := d.c.Stats(r.Context())
	if err != nil {
		d.fail(w, err)
		return
	}
	circuits, err := d.c.Circuits(r.Context())
	if err != nil {
		d.fail(w, err)
		return
	}
	buckets, err := d.d.ListRateBuckets(r.Context())
	if err != nil {
		d.fail(w, err)
		return
	}
	v.Title, v.Nav = "Queues", "queues"
	v.Data = map[string]any{"Queues": st, "Circuits": circuits, "Buckets": buckets}
	d.render(w, "queues", v)
}

// circuitAction opens or closes a type's circuit breaker by hand; the type
// comes from the form, so that a circuit with no row yet can be opened.
func (d *Dashboard) circuitAction(w http.ResponseWriter, r *http.Request, _ *view) {
	typ := r.PostFormValue("type")
	var err error
	switch r.PathValue("action") {
	case "open":
		_, err = d.c.OpenCircuit(r.Context(), typ)
	case "close":
		_, err = d.c.CloseCircuit(r.Context(), typ)
	default:
		http.Error(w, "action: want open or close", http.StatusNotFound)
		return
	}
	if err != nil {
		d.fail(w, err)
		return
	}
	back(w, r, "/queues", "Circuit of "+typ+": "+r.PathValue("action")+".")
}

func (d *Dashboard) queueAction(w http.ResponseWriter, r *http.Request, _ *view) {
	name := r.PathValue("name")
	var err error
	switch r.PathValue("action") {
	case "pause":
		err = d.c.PauseQueue(r.Context(), name)
	case "resume":
		err = d.c.ResumeQueue(r.Context(), name)
	default:
		http.Error(w, "action: want pause or resume", http.StatusNotFound)
		return
	}
	if err != nil {
		d.fail(w, err)
		return
	}
	back(w, r, "/queues", "Queue "+r.PathValue("action")+"d.")
}

type scheduleRow struct {
	Name, Spec, Type, Queue string
	Configured              bool
	Next                    time.Time
	State                   driver.ScheduleState
}

func (d *Dashboard) schedules(w http.ResponseWriter, r *http.Request, v *view) {
	states, err := d.d.ListSchedules(r.Context())
	if err != nil {
		d.fail(w, err)
		return
	}
	byName := map[string]*scheduleRow{}
	var rows []*scheduleRow
	now := time.Now()
	for _, s := range d.c.Schedules() {
		row := &scheduleRow{Name: s.Name, Spec: s.Spec.String(), Type: s.Type, Queue: s.Queue, Configured: true, Next: s.Spec.Next(now).At}
		byName[s.Name] = row
		rows = append(rows, row)
	}
	for _, st := range states {
		row := byName[st.Name]
		if row == nil {
			// Known to the database but not configured in this process.
			row = &scheduleRow{Name: st.Name}
			rows = append(rows, row)
		}
		row.State = st
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	v.Title, v.Nav = "Schedules", "schedules"
	v.Data = rows
	d.render(w, "schedules", v)
}

type batchRow struct {
	driver.Checkpoint
	Rate string // rows per second since the shard started
}

func (d *Dashboard) batches(w http.ResponseWriter, r *http.Request, v *view) {
	cps, err := d.d.ListCheckpoints(r.Context())
	if err != nil {
		d.fail(w, err)
		return
	}
	rows := make([]batchRow, len(cps))
	for i, c := range cps {
		rows[i] = batchRow{Checkpoint: c, Rate: "—"}
		if el := c.UpdatedAt.Sub(c.CreatedAt).Seconds(); el > 0 {
			rows[i].Rate = strconv.FormatFloat(float64(c.RowsDone)/el, 'f', 1, 64)
		}
	}
	v.Title, v.Nav = "Batches", "batches"
	v.Data = rows
	d.render(w, "batches", v)
}

func (d *Dashboard) leases(w http.ResponseWriter, r *http.Request, v *view) {
	ls, err := d.d.ListLeases(r.Context())
	if err != nil {
		d.fail(w, err)
		return
	}
	v.Title, v.Nav = "Locks and leases", "leases"
	v.Data = ls
	d.render(w, "leases", v)
}

func (d *Dashboard) workers(w http.ResponseWriter, r *http.Request, v *view) {
	ns, err := d.d.ListNodes(r.Context())
	if err != nil {
		d.fail(w, err)
		return
	}
	v.Title, v.Nav = "Workers", "workers"
	v.Data = ns
	d.render(w, "workers", v)
}
