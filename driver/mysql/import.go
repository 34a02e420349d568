package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// Import is driver.Importer's Import.
func (d *Driver) Import(ctx context.Context, p driver.ImportParams) (driver.ImportResult, error) {
	// DDL commits in MySQL, so the ledger is created before the batch's
	// transaction begins.
	if _, err := d.Write.ExecContext(ctx, d.q.ImportLedgerCreate); err != nil {
		return driver.ImportResult{}, fmt.Errorf("create the import ledger: %w", err)
	}
	tx, err := d.Write.BeginTx(ctx, nil)
	if err != nil {
		return driver.ImportResult{}, err
	}
	defer tx.Rollback()
	var res driver.ImportResult
	for _, r := range p.Rows {
		var done int
		if err := tx.QueryRowContext(ctx, d.q.ImportLedgerHas, p.Source, r.SourceID).Scan(&done); err != nil {
			return driver.ImportResult{}, fmt.Errorf("row id %d: %w", r.SourceID, err)
		}
		if done > 0 {
			res.Before++
			continue
		}
		// A key the row would hold may be held by a job of the new code:
		// that job stands, and the row is recorded as imported to it.
		var id int64
		if r.Key.Valid && (r.Status == sluicetype.StatusPending || r.Dedupe != sluicetype.DedupeActive) {
			err := tx.QueryRowContext(ctx, d.q.ImportKeyHolder, r.Key.String).Scan(&id)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return driver.ImportResult{}, fmt.Errorf("row id %d: %w", r.SourceID, err)
			}
		}
		if id != 0 {
			res.KeyTaken++
		} else {
			ins, err := tx.ExecContext(ctx, d.q.ImportInsert, r.Type, r.Key, r.Payload, string(r.Status), r.Attempts, r.NextRunAt,
				r.LastError, r.CreatedAt, r.UpdatedAt, r.FinishedAt, r.MaxAttempts, r.Queue, r.Dedupe)
			if err == nil {
				id, err = ins.LastInsertId()
			}
			if err != nil {
				return driver.ImportResult{}, fmt.Errorf("row id %d: %w", r.SourceID, err)
			}
			res.Copied++
		}
		if _, err := tx.ExecContext(ctx, d.q.ImportLedgerAdd, p.Source, r.SourceID, id); err != nil {
			return driver.ImportResult{}, fmt.Errorf("row id %d: record in sluice_imports: %w", r.SourceID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return driver.ImportResult{}, err
	}
	return res, nil
}

var _ driver.Importer = (*Driver)(nil)

// ImportSourceColumns is driver.Importer's ImportSourceColumns.
func (d *Driver) ImportSourceColumns(ctx context.Context, table string) (map[string]string, error) {
	rows, err := d.Read.QueryContext(ctx, d.q.ImportColumns, table)
	if err != nil {
		return nil, fmt.Errorf("read the columns of %s: %w", table, err)
	}
	defer rows.Close()
	kinds := map[string]string{}
	for rows.Next() {
		var c, k string
		if err := rows.Scan(&c, &k); err != nil {
			return nil, err
		}
		kinds[c] = k
	}
	return kinds, rows.Err()
}

// ScanImport is driver.Importer's ScanImport. A payload is read as the
// bytes the table holds (no conversion that would turn invalid UTF-8 into
// '?'), and not at all past p.MaxPayload: a row refused for its size is
// not transferred. The copy sends each payload as one value, which the
// server refuses past its max_allowed_packet: such a row gets a Problem
// here, before anything is written, not an error in the middle of the copy.
func (d *Driver) ScanImport(ctx context.Context, p driver.ScanImportParams, fn func(driver.ImportSourceRow) error) error {
	var packet int64
	if err := d.Read.QueryRowContext(ctx, d.q.ImportMaxValue).Scan(&packet); err != nil {
		return fmt.Errorf("read max_allowed_packet: %w", err)
	}
	sel := make([]string, len(driver.ImportColumns))
	for i, c := range driver.ImportColumns {
		src := p.Columns[c]
		switch {
		case src == "":
			sel[i] = "NULL"
		case slices.Contains(driver.ImportTimeColumns, c):
			sel[i] = "DATE_FORMAT(" + quoteIdent(src) + ", '%Y-%m-%d %H:%i:%s.%f')"
		case c == "payload":
			sel[i] = fmt.Sprintf("IF(OCTET_LENGTH(%s) > %d, NULL, %s)", quoteIdent(src), p.MaxPayload, quoteIdent(src))
		default:
			sel[i] = quoteIdent(src)
		}
	}
	size := "NULL"
	if src := p.Columns["payload"]; src != "" {
		size = "OCTET_LENGTH(" + quoteIdent(src) + ")"
	}
	rows, err := d.Read.QueryContext(ctx, "SELECT "+strings.Join(sel, ", ")+", "+size+" FROM "+quoteIdent(p.Table)+" ORDER BY "+quoteIdent(p.Columns["id"]))
	if err != nil {
		return fmt.Errorf("read %s: %w", p.Table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var r driver.ImportSourceRow
		t := &r.Times
		if err := rows.Scan(&r.ID, &r.Key, &r.Type, &r.Payload, &r.Status, &r.Attempts, &r.MaxAttempts,
			&t[0], &r.LastError, &t[1], &t[2], &t[3], &t[4], &r.PayloadSize); err != nil {
			return fmt.Errorf("read %s: %w", p.Table, err)
		}
		if r.PayloadSize.Valid && r.PayloadSize.Int64 <= int64(p.MaxPayload) && r.PayloadSize.Int64 > packet {
			r.Problem = fmt.Errorf("payload: %d bytes, more than this server takes in one value (max_allowed_packet = %d); raise max_allowed_packet to at least %d, sluice's payload limit, and import again",
				r.PayloadSize.Int64, packet, p.MaxPayload)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return rows.Err()
}
