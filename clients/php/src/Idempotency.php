<?php

declare(strict_types=1);

namespace Sluice;

/**
 * Applies each job once: the delivery's Idempotency-Key is recorded in the
 * app's own database in the same transaction as the app's effect. A
 * redelivery (the answer to an applied attempt was lost, say) finds the key
 * and changes nothing; a concurrent one waits on the key's row until the
 * first transaction ends.
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
     */
    public function once(Webhook\Delivery $d, callable $effect): bool
    {
        $this->pdo->beginTransaction();
        try {
            $st = $this->pdo->prepare(match ($this->driver) {
                'mysql' => "INSERT INTO {$this->table} (idempotency_key, job_id) VALUES (?, ?)
                    ON DUPLICATE KEY UPDATE idempotency_key = idempotency_key",
                default => "INSERT INTO {$this->table} (idempotency_key, job_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
            });
            $st->execute([$d->idempotencyKey, $d->id]);
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
