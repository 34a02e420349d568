<?php

declare(strict_types=1);

namespace Sluice;

/**
 * Applies each job once: the delivery's Idempotency-Key (with the effect's
 * scope, when one job has several) is recorded in the app's own database
 * in the same transaction as the app's effect. A redelivery (the answer to
 * an applied attempt was lost, say) finds the key and changes nothing; a
 * concurrent one waits on the key's row until the first transaction ends.
 */
final class Idempotency
{
    private readonly string $driver;

    public function __construct(private readonly \PDO $pdo, private readonly string $table = 'sluice_applied')
    {
        if (!preg_match('/^[A-Za-z_][A-Za-z0-9_]*$/', $table)) {
            throw new ValidationException('table', 'want letters, digits and _');
        }
        if ($pdo->getAttribute(\PDO::ATTR_ERRMODE) !== \PDO::ERRMODE_EXCEPTION) {
            // A failed statement must not pass unnoticed between the key and the effect.
            throw new \InvalidArgumentException('pdo: set PDO::ATTR_ERRMODE to PDO::ERRMODE_EXCEPTION');
        }
        $this->driver = $pdo->getAttribute(\PDO::ATTR_DRIVER_NAME);
    }

    /** Creates the table of applied keys when it does not exist. */
    public function createTable(): void
    {
        $this->pdo->exec(match ($this->driver) {
            'mysql' => "CREATE TABLE IF NOT EXISTS {$this->table} (idempotency_key VARCHAR(255) NOT NULL PRIMARY KEY,
                job_id BIGINT NOT NULL, applied_at DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6))) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
            'pgsql' => "CREATE TABLE IF NOT EXISTS {$this->table} (idempotency_key text PRIMARY KEY,
                job_id bigint NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
            default => "CREATE TABLE IF NOT EXISTS {$this->table} (idempotency_key TEXT PRIMARY KEY,
                job_id INTEGER NOT NULL, applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')))",
        });
    }

    /**
     * Runs $effect($pdo) in a transaction that first records the delivery's
     * key, and commits both; returns false, running nothing, when the key
     * was already applied. An exception from $effect rolls both back.
     *
     * @param callable(\PDO):void $effect
     * @param string|null $scope names the effect when one delivery has
     *     several (two handlers of one message: "mail", "invoice"), each
     *     applied once; null keys on the job alone
     * @throws ValidationException for a scope that is empty, over 200 bytes or holds a NUL
     */
    public function once(Webhook\Delivery $d, callable $effect, ?string $scope = null): bool
    {
        $key = $d->idempotencyKey;
        if ($scope !== null) {
            if ($scope === '' || strlen($scope) > 200 || str_contains($scope, "\0")) {
                throw new ValidationException('scope', 'want 1 to 200 bytes, no NUL');
            }
            // The key holds no space (job-<id>-<micros>), so no scope makes another job's key.
            $key .= ' ' . $scope;
        }
        if (strlen($key) > 255) {
            // The column's size: a longer key must not be cut into another's.
            throw new ValidationException('scope', 'with the Idempotency-Key, over the 255 bytes the table holds');
        }
        $this->pdo->beginTransaction();
        try {
            $st = $this->pdo->prepare(match ($this->driver) {
                // INSERT IGNORE, not ON DUPLICATE KEY UPDATE: with
                // PDO::MYSQL_ATTR_FOUND_ROWS the latter counts the found
                // duplicate as a row, and a redelivery would look new. The
                // key's length is checked above and the job id is an int, so
                // a duplicate is the only error IGNORE can turn into a warning.
                'mysql' => "INSERT IGNORE INTO {$this->table} (idempotency_key, job_id) VALUES (?, ?)",
                default => "INSERT INTO {$this->table} (idempotency_key, job_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
            });
            $st->execute([$key, $d->id]);
            if ($st->rowCount() === 0) {
                $this->pdo->rollBack();
                return false;
            }
            $effect($this->pdo);
            $this->pdo->commit();
            return true;
        } catch (\Throwable $e) {
            if ($this->pdo->inTransaction()) {
                $this->pdo->rollBack();
            }
            throw $e;
        }
    }
}
