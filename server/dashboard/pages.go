package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/scheduler"
	"github.com/sluicehq/sluice/sluicetype"
)

func (d *Dashboard) overview(w http.ResponseWriter, r *http.Request, v *view) {
	full, ok := d.snapshot(w, r)
	if !ok {
		return
	}
	snap := full.busiest()
	b, err := json.Marshal(snap)
	if err != nil {
		d.fail(w, err)
		return
	}
	// Read at each load, not polled: it changes when a deploy does.
	waiting, err := d.c.WaitingForHandler(r.Context())
	if err != nil {
		d.fail(w, err)
		return
	}
	unserved, err := d.c.UnservedQueues(r.Context())
	if err != nil {
		d.fail(w, err)
		return
	}
	// Bounded like the queues table: an app that names a queue per tenant
	// can leave thousands unserved. The fullest come first.
	unservedTotal := len(unserved)
	if unservedTotal > queuesShown {
		sort.SliceStable(unserved, func(i, j int) bool { return unserved[i].Pending > unserved[j].Pending })
		unserved = unserved[:queuesShown]
	}
	v.Title, v.Nav = "Overview", "overview"
	// The page is drawn from the same snapshot the script then polls; the
	// script reads it from data-live, an attribute that html/template
	// escapes, so no inline script is needed.
	v.Data = map[string]any{"Snap": snap, "JSON": string(b), "Waiting": waiting, "Unserved": unserved, "UnservedTotal": unservedTotal}
	d.render(w, "overview", v)
}

const pageSize = 50

// filterOf reads the job filter of the Jobs page and its bulk actions.
func filterOf(q url.Values) sluicetype.ListParams {
	return sluicetype.ListParams{Status: sluicetype.Status(q.Get("status")), Type: q.Get("type"), Queue: q.Get("queue"), KeyPrefix: q.Get("key"),
		PayloadField: strings.TrimSpace(q.Get("field")), PayloadValue: q.Get("value")}
}

// filterQuery is the query string of a filter, for links and forms.
func filterQuery(p sluicetype.ListParams) url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"status": string(p.Status), "type": p.Type, "queue": p.Queue, "key": p.KeyPrefix, "field": p.PayloadField, "value": p.PayloadValue} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

func (d *Dashboard) jobs(w http.ResponseWriter, r *http.Request, v *view) {
	q := r.URL.Query()
	after, _ := strconv.ParseInt(q.Get("after"), 10, 64)
	p := filterOf(q)
	p.AfterID, p.Limit = after, pageSize
	list, err := d.c.Jobs(r.Context(), p)
	if err != nil {
		d.fail(w, err)
		return
	}
	var next string
	if len(list) == pageSize {
		next = pageAfter("/jobs", q, "after", list[len(list)-1].ID)
	}
	v.Title, v.Nav = "Jobs", "jobs"
	// Whole URLs built here: html/template would escape a query string
	// spliced into one.
	type bulkLink struct{ Action, Href string }
	var links []bulkLink
	for _, a := range []string{sluicetype.BulkRetry, sluicetype.BulkCancel, sluicetype.BulkDelete} {
		bq := filterQuery(p)
		bq.Set("action", a)
		links = append(links, bulkLink{a, "/jobs/bulk?" + bq.Encode()})
	}
	v.Data = map[string]any{"Jobs": list, "Filter": p, "Next": next, "Scan": sluicetype.PayloadScan, "Bulk": links,
		"Statuses": []sluicetype.Status{"", sluicetype.StatusPending, sluicetype.StatusProcessing, sluicetype.StatusSuccess, sluicetype.StatusFailed, sluicetype.StatusCancelled}}
	d.render(w, "jobs", v)
}

// bulkForm is the confirmation page of a bulk action: how many jobs the
// filter selects now, and a form that applies the action to those only
// (ids up to the newest counted).
func (d *Dashboard) bulkForm(w http.ResponseWriter, r *http.Request, v *view) {
	q := r.URL.Query()
	action, p := q.Get("action"), filterOf(q)
	n, err := d.c.CountBulk(r.Context(), action, p)
	if err != nil {
		d.fail(w, err)
		return
	}
	v.Title, v.Nav = "Confirm: "+action+" jobs", "jobs"
	v.Data = map[string]any{"Action": action, "Count": n, "Filter": p, "Back": "/jobs?" + filterQuery(p).Encode(),
		"Statuses": sluicetype.BulkStatuses[action], "Max": sluicetype.MaxBulk, "Fields": filterQuery(p)}
	d.render(w, "bulk", v)
}

func (d *Dashboard) bulk(w http.ResponseWriter, r *http.Request, _ *view) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form: "+err.Error(), http.StatusBadRequest)
		return
	}
	action, p := r.PostForm.Get("action"), filterOf(r.PostForm)
	upTo, err := strconv.ParseInt(r.PostFormValue("upto"), 10, 64)
	if err != nil || upTo <= 0 {
		http.Error(w, "upto: want the positive job id the confirmation counted up to", http.StatusBadRequest)
		return
	}
	n, err := d.c.Bulk(r.Context(), action, p, upTo)
	if err != nil {
		d.fail(w, err)
		return
	}
	d.live.invalidate()
	past := map[string]string{sluicetype.BulkRetry: "moved back to pending", sluicetype.BulkCancel: "cancelled", sluicetype.BulkDelete: "deleted"}[action]
	d.back(w, r, "/jobs?"+filterQuery(p).Encode(), fmt.Sprintf("%d jobs %s.", n, past))
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
	logs, err := d.c.AttemptLogs(r.Context(), id, 0)
	if err != nil {
		d.fail(w, err)
		return
	}
	// Each log shows in its attempt's entry of the timeline; a job that
	// never failed has no history, so its logs show on their own.
	byAttempt := map[int]*sluicetype.AttemptLog{}
	for i := range logs {
		byAttempt[logs[i].Attempt] = &logs[i]
	}
	var unlisted []*sluicetype.AttemptLog
	for i := range logs {
		if !slices.ContainsFunc(j.History, func(a sluicetype.Attempt) bool { return a.Number == logs[i].Attempt }) {
			unlisted = append(unlisted, &logs[i])
		}
	}
	v.Title, v.Nav = fmt.Sprintf("Job %d", j.ID), "jobs"
	v.Data = map[string]any{"Job": j, "Payload": prettyJSON(j.Payload), "Result": prettyJSON([]byte(j.Result)),
		"Logs": byAttempt, "UnlistedLogs": unlisted,
		"CanRetry":  j.Status == sluicetype.StatusFailed || j.Status == sluicetype.StatusCancelled,
		"CanCancel": j.Status == sluicetype.StatusPending || j.Status == sluicetype.StatusFailed || j.Status == sluicetype.StatusProcessing}
	d.render(w, "job", v)
}

// prettyJSON indents JSON for reading; anything else is shown as it is.
func prettyJSON(b []byte) string {
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return string(b)
	}
	return out.String()
}

func (d *Dashboard) retry(w http.ResponseWriter, r *http.Request, _ *view) {
	d.jobAction(w, r, d.c.Retry, "Job moved back to pending.")
}

func (d *Dashboard) cancel(w http.ResponseWriter, r *http.Request, _ *view) {
	d.jobAction(w, r, d.c.Cancel, "Job cancelled.")
}

// jobAction applies act to the job of the path and goes back to its page
// saying done.
func (d *Dashboard) jobAction(w http.ResponseWriter, r *http.Request, act func(context.Context, int64) error, done string) {
	id, ok := d.jobID(w, r)
	if !ok {
		return
	}
	if err := act(r.Context(), id); err != nil {
		d.fail(w, err)
		return
	}
	d.back(w, r, fmt.Sprintf("/jobs/%d", id), done)
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
	list, err := d.c.Jobs(r.Context(), sluicetype.ListParams{Status: sluicetype.StatusFailed, Limit: failedScan})
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
	d.back(w, r, "/failed", fmt.Sprintf("%d jobs moved back to pending.", moved))
}

func (d *Dashboard) queues(w http.ResponseWriter, r *http.Request, v *view) {
	full, ok := d.snapshot(w, r)
	if !ok {
		return
	}
	after := r.URL.Query().Get("after")
	snap := full.page(after)
	circuits, err := d.c.Circuits(r.Context())
	if err != nil {
		d.fail(w, err)
		return
	}
	buckets, err := d.c.RateBuckets(r.Context())
	if err != nil {
		d.fail(w, err)
		return
	}
	// The partitions with the largest backlog and the running caps of the
	// queues shown, from one read of the live rows for all queues; the
	// counts come from the snapshot.
	names := make([]string, len(snap.Queues))
	for i, q := range snap.Queues {
		names[i] = q.Queue
	}
	st, err := d.c.QueuePartitions(r.Context(), names)
	if err != nil {
		d.fail(w, err)
		return
	}
	var limited []sluicetype.QueueStats
	for i, q := range st {
		q.Processing = snap.Queues[i].Processing
		if q.Fair || q.MaxRunning > 0 || len(q.Partitions) > 0 {
			limited = append(limited, q)
		}
	}
	v.Title, v.Nav = "Queues", "queues"
	v.Data = map[string]any{"Queues": snap.Queues, "Circuits": circuits, "Buckets": buckets,
		"Limited": limited, "Top": sluice.TopPartitions, "After": after, "Next": snap.Next, "Total": snap.QueuesTotal, "Shown": queuesShown}
	d.render(w, "queues", v)
}

// circuitAction opens or closes a type's circuit breaker by hand; the type
// comes from the form, so that a circuit with no row yet can be opened.
func (d *Dashboard) circuitAction(w http.ResponseWriter, r *http.Request, _ *view) {
	typ := r.PostFormValue("type")
	// The pages show the new state from the next read, not from the reply.
	errOnly := func(set func(context.Context, string) (sluicetype.Circuit, error)) func(context.Context, string) error {
		return func(ctx context.Context, typ string) error {
			_, err := set(ctx, typ)
			return err
		}
	}
	acts := map[string]func(context.Context, string) error{"open": errOnly(d.c.OpenCircuit), "close": errOnly(d.c.CloseCircuit)}
	if d.pathAction(w, r, typ, "open or close", acts) {
		d.back(w, r, "/queues", "Circuit of "+typ+": "+r.PathValue("action")+".")
	}
}

func (d *Dashboard) queueAction(w http.ResponseWriter, r *http.Request, _ *view) {
	acts := map[string]func(context.Context, string) error{"pause": d.c.PauseQueue, "resume": d.c.ResumeQueue}
	if d.pathAction(w, r, r.PathValue("name"), "pause or resume", acts) {
		d.live.invalidate()
		d.back(w, r, "/queues", "Queue "+r.PathValue("action")+"d.")
	}
}

// pathAction runs on target the action of acts that the path names, and
// reports whether it ran; an unknown action (want says the known ones) or
// its error is answered here.
func (d *Dashboard) pathAction(w http.ResponseWriter, r *http.Request, target, want string, acts map[string]func(context.Context, string) error) bool {
	act, ok := acts[r.PathValue("action")]
	if !ok {
		http.Error(w, "action: want "+want, http.StatusNotFound)
		return false
	}
	if err := act(r.Context(), target); err != nil {
		d.fail(w, err)
		return false
	}
	return true
}

type scheduleRow struct {
	Name, Spec, Zone, Type, Queue string
	Configured                    bool
	Next                          time.Time // zero when not configured here
	LastSlot                      time.Time // zero when no slot was handled yet
	State                         sluicetype.ScheduleState
}

func (d *Dashboard) schedules(w http.ResponseWriter, r *http.Request, v *view) {
	states, err := d.c.ScheduleStates(r.Context())
	if err != nil {
		d.fail(w, err)
		return
	}
	byName := map[string]sluicetype.ScheduleState{}
	for _, st := range states {
		byName[st.Name] = st
	}
	var rows []*scheduleRow
	now := time.Now()
	for _, s := range d.c.Schedules() {
		st := byName[s.Name]
		delete(byName, s.Name)
		rows = append(rows, &scheduleRow{Name: s.Name, Spec: s.Spec.String(), Zone: s.Spec.Location().String(), Type: s.Type,
			Queue: s.Queue, Configured: true, Next: scheduler.NextSlot(s.Spec, st, now).At, State: st})
	}
	for _, st := range byName {
		// Known to the database but not configured in this process.
		rows = append(rows, &scheduleRow{Name: st.Name, State: st})
	}
	for _, row := range rows {
		row.LastSlot, _ = scheduler.LastSlot(row.State)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	v.Title, v.Nav = "Schedules", "schedules"
	v.Data = rows
	d.render(w, "schedules", v)
}

type batchRow struct {
	sluicetype.Checkpoint
	Rate string // rows per second since the shard started
}

func (d *Dashboard) batches(w http.ResponseWriter, r *http.Request, v *view) {
	cps, err := d.c.Checkpoints(r.Context())
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
	ls, err := d.c.Leases(r.Context())
	d.list(w, v, "leases", "Locks and leases", ls, err)
}

func (d *Dashboard) workers(w http.ResponseWriter, r *http.Request, v *view) {
	ns, err := d.c.Nodes(r.Context())
	d.list(w, v, "workers", "Workers", ns, err)
}

// list renders page, whose template ranges over rows, or answers the
// error of the read that returned them.
func (d *Dashboard) list(w http.ResponseWriter, v *view, page, title string, rows any, err error) {
	if err != nil {
		d.fail(w, err)
		return
	}
	v.Title, v.Nav = title, page
	v.Data = rows
	d.render(w, page, v)
}

// audit lists the audit trail newest first, a page at a time. It is
// for sessions that may operate, as GET /v1/audit is for operate
// tokens: who acted from where is not for every reader.
func (d *Dashboard) audit(w http.ResponseWriter, r *http.Request, v *view) {
	q := r.URL.Query()
	before, _ := strconv.ParseInt(q.Get("before"), 10, 64)
	p := sluice.AuditParams{Actor: q.Get("actor"), Action: q.Get("action"), BeforeID: max(before, 0), Limit: pageSize}
	list, err := d.c.Audit(r.Context(), p)
	if err != nil {
		d.fail(w, err)
		return
	}
	var next string
	if len(list) == pageSize {
		next = pageAfter("/audit", q, "before", list[len(list)-1].ID)
	}
	v.Title, v.Nav = "Audit trail", "audit"
	v.Data = map[string]any{"Entries": list, "Actor": p.Actor, "Action": p.Action, "Next": next}
	d.render(w, "audit", v)
}
