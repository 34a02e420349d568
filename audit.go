package sluice

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// Actor is who performs an operator action, for the audit trail: the
// server, the dashboard and the CLI put one in the context of every
// request or command (WithActor), and the Client's operator actions
// record it. See docs/deploy.md "Audit trail".
type Actor struct {
	// Name is who: a token's name (never its value), or cli:<os user>.
	Name string
	// Source is the door: sluicetype.AuditAPI, AuditDashboard or AuditCLI.
	Source string
	// Address is where from: the client's address, or the CLI's host.
	Address string
}

type actorKey struct{}

// WithActor returns ctx carrying a, so that the operator actions called
// with it (Retry, RetryFailed, Cancel, Bulk, Purge, PauseQueue,
// ResumeQueue, OpenCircuit, CloseCircuit) are recorded in the audit
// trail as a's. An action called without an actor is the application's
// own code at work, and is not recorded.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

func actorOf(ctx context.Context) (Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(Actor)
	return a, ok
}

// DefaultAuditRetention is how long audit entries are kept when
// Config.AuditRetention is zero.
const DefaultAuditRetention = 90 * 24 * time.Hour

// MaxAuditList is the most entries one Audit call returns.
const MaxAuditList = 1000

// audit records an operator action that succeeded, as the actor in ctx,
// after the change: the driver methods of the actions take no caller's
// transaction, so the entry is a write of its own. An action without an
// actor is not recorded. A failure to record is logged at error level
// with the whole entry, not returned: the change is made, and an error
// would tell the caller it was not.
func (c *Client) audit(ctx context.Context, action, target string, affected int64) {
	a, ok := actorOf(ctx)
	if !ok {
		return
	}
	e := sluicetype.AuditEntry{
		Actor:    cut(a.Name, sluicetype.MaxAuditActor),
		Source:   cut(a.Source, sluicetype.MaxAuditSource),
		Address:  cut(a.Address, sluicetype.MaxAuditAddress),
		Action:   cut(action, sluicetype.MaxAuditAction),
		Target:   cut(target, sluicetype.MaxAuditTarget),
		Affected: affected,
	}
	// A client that hangs up once the change is made must not take its
	// record with it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := c.drv.InsertAudit(ctx, driver.InsertAuditParams{Entry: e}); err != nil {
		c.log.Error("audit entry not recorded", "actor", e.Actor, "source", e.Source, "address", e.Address,
			"action", e.Action, "target", e.Target, "affected", e.Affected, "err", err)
	}
}

// cut makes s text every driver stores whole: valid UTF-8 without NUL
// (PostgreSQL refuses both in text), at most n bytes, cut on a rune
// boundary.
func cut(s string, n int) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", `\x00`)
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// filterTarget is a bulk action's filter as an audit target, such as
// "status=failed type=mail".
func filterTarget(f sluicetype.ListParams, upTo int64) string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("status", string(f.Status))
	add("type", f.Type)
	add("queue", f.Queue)
	add("key_prefix", f.KeyPrefix)
	if f.PayloadField != "" {
		add("payload."+f.PayloadField, f.PayloadValue)
	}
	if upTo > 0 {
		add("up_to_id", fmt.Sprint(upTo))
	}
	if len(parts) == 0 {
		return "all jobs"
	}
	return strings.Join(parts, " ")
}

// RecordAction records in the audit trail, as the actor in ctx, an
// operator action that succeeded outside the Client's own methods, such
// as `sluice batch pause`. Without an actor it records nothing, as the
// Client's actions do.
func (c *Client) RecordAction(ctx context.Context, action, target string, affected int64) {
	c.audit(ctx, action, target, affected)
}

// AuditParams filters Audit.
type AuditParams struct {
	// Within keeps only the entries recorded this long before the
	// database clock's now; zero keeps them all.
	Within time.Duration
	// Actor and Action keep only the entries of this actor and action.
	Actor, Action string
	// BeforeID reads the page after the one whose last id it is.
	BeforeID int64
	// Limit is at most MaxAuditList; 0 means 100.
	Limit int
}

// Audit reads the audit trail newest first.
func (c *Client) Audit(ctx context.Context, p AuditParams) ([]sluicetype.AuditEntry, error) {
	switch {
	case p.Limit < 0 || p.Limit > MaxAuditList:
		return nil, inputErr("limit", "%d: want 1 to %d", p.Limit, MaxAuditList)
	case p.Limit == 0:
		p.Limit = 100
	}
	if p.BeforeID < 0 {
		return nil, inputErr("before_id", "%d: want a positive id", p.BeforeID)
	}
	if p.Within < 0 {
		return nil, inputErr("since", "%s: want a positive duration", p.Within)
	}
	var since time.Time
	if p.Within > 0 {
		now, err := c.drv.Now(ctx)
		if err != nil {
			return nil, err
		}
		since = now.Add(-p.Within)
	}
	return c.drv.ListAudit(ctx, driver.ListAuditParams{Since: since, Actor: p.Actor, Action: p.Action, BeforeID: p.BeforeID, Limit: p.Limit})
}
