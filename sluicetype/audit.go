package sluicetype

import "time"

// AuditEntry is one row of the audit trail (sluice_audit): an operator
// action that changed jobs, queues or circuits, recorded after it
// succeeded. docs/deploy.md "Audit trail" lists the actions.
type AuditEntry struct {
	ID int64 `json:"id"`
	// At is when it was recorded, on the database clock.
	At time.Time `json:"at"`
	// Actor is who acted: a token's name (never its value), "anonymous"
	// on a server without tokens, or cli:<os user> for the CLI.
	Actor string `json:"actor"`
	// Source is the door it came through: AuditAPI, AuditDashboard or
	// AuditCLI.
	Source string `json:"source"`
	// Address is where from: the client's address for the API and the
	// dashboard (behind trusted proxies, the forwarded one), the host
	// name for the CLI.
	Address string `json:"address"`
	// Action is what was done, such as job.retry or queue.pause.
	Action string `json:"action"`
	// Target is what it was done to, such as "job 42", "queue mail" or a
	// bulk action's filter.
	Target string `json:"target"`
	// Affected is how many jobs, queues or circuits changed.
	Affected int64 `json:"affected"`
}

// The sources of an audit entry.
const (
	AuditAPI       = "api"
	AuditDashboard = "dashboard"
	AuditCLI       = "cli"
)

// Limits of an audit entry's text fields, which every driver stores
// whole; the Client cuts longer values to them.
const (
	MaxAuditActor   = 191
	MaxAuditSource  = 32
	MaxAuditAddress = 255
	MaxAuditAction  = 64
	MaxAuditTarget  = 1024
)
