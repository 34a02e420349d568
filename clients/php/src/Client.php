<?php

declare(strict_types=1);

namespace Sluice;

/**
 * Enqueues sluice jobs with the app's own PDO connection (MySQL/MariaDB,
 * PostgreSQL or SQLite), inside the transaction the app has open or in one of
 * its own, with the dedupe-safe statement of docs/job-table.md: a
 * taken business key returns the job that holds it and never aborts the
 * caller's transaction.
 *
 * Only the columns the caller sets are written; the rest come from the
 * database, where sluice applies the type's settings from sluice.yaml.
 */
final class Client
{
    private readonly string $driver;
    private readonly string $table;

    /**
     * @param array{prefix?:string} $options prefix: sluice's table prefix
     *     (default $SLUICE_PREFIX, else "sluice_"), as the server's.
     */
    public function __construct(private readonly \PDO $pdo, array $options = [])
    {
        foreach (array_keys($options) as $k) {
            if ($k !== 'prefix') {
                throw new ValidationException((string) $k, 'unknown option; want prefix');
            }
        }
        $prefix = $options['prefix'] ?? (getenv('SLUICE_PREFIX') ?: 'sluice_');
        if (!is_string($prefix) || !preg_match('/^[A-Za-z0-9_]*$/', $prefix)) {
            throw new ValidationException('prefix', 'want letters, digits and _');
        }
        $this->driver = $pdo->getAttribute(\PDO::ATTR_DRIVER_NAME);
        if (!in_array($this->driver, ['mysql', 'pgsql', 'sqlite'], true)) {
            throw new \InvalidArgumentException("PDO driver {$this->driver}: sluice runs on mysql, pgsql or sqlite");
        }
        $this->table = $prefix . 'jobs';
    }

    /** sluice's job table, with its prefix. */
    public function table(): string
    {
        return $this->table;
    }

    /**
     * Enqueues one job. $options: key, dedupe (permanent|active), queue,
     * priority, run_at (DateTimeInterface or RFC 3339) or delay (seconds or
     * DateInterval), deadline (DateTimeInterface or RFC 3339: a job not
     * started by then is cancelled; a type's deadline does not apply to
     * these plain inserts), progress_timeout (seconds, a duration such as
     * "5m", or DateInterval: a running job that reports no progress for
     * that long is stuck, and its type's on_stuck applies), max_attempts,
     * partition.
     *
     * @param array<string,mixed> $payload
     * @param array<string,mixed> $options
     * @throws ValidationException when the server would refuse the job; nothing is written
     */
    public function enqueue(string $type, array|object $payload = [], array $options = []): EnqueueResult
    {
        $job = Rules::job($type, $payload, $options);
        return $this->withExceptions(fn () => $this->insert($job));
    }

    /**
     * Enqueues several jobs, all or nothing: each is an array like the body of
     * POST /v1/jobs (type, payload and the options of enqueue). Inside the
     * caller's transaction they are written under a savepoint, so a failure
     * leaves that transaction as it was.
     *
     * @param list<array<string,mixed>> $jobs
     * @return list<EnqueueResult> in the order of $jobs
     */
    public function enqueueMany(array $jobs): array
    {
        $checked = [];
        foreach (array_values($jobs) as $i => $j) {
            try {
                $checked[] = Rules::request($j);
            } catch (ValidationException $e) {
                $field = $e->field === 'body' ? "jobs[$i]" : "jobs[$i].{$e->field}";
                throw new ValidationException($field, substr($e->getMessage(), strlen($e->field) + 2));
            }
        }
        if ($checked === []) {
            return [];
        }
        return $this->withExceptions(function () use ($checked) {
            $own = !$this->pdo->inTransaction();
            if ($own) {
                $this->pdo->beginTransaction();
            } else {
                $this->pdo->exec('SAVEPOINT sluice_enqueue_many');
            }
            try {
                $out = array_map(fn ($job) => $this->insert($job), $checked);
            } catch (\Throwable $e) {
                if ($own) {
                    $this->pdo->rollBack();
                } else {
                    $this->pdo->exec('ROLLBACK TO SAVEPOINT sluice_enqueue_many');
                }
                throw $e;
            }
            $own ? $this->pdo->commit() : $this->pdo->exec('RELEASE SAVEPOINT sluice_enqueue_many');
            return $out;
        });
    }

    /** @param array{type:string,payload:string,options:array<string,mixed>} $job */
    private function insert(array $job): EnqueueResult
    {
        $o = $job['options'];
        $cols = ['type', 'payload'];
        $vals = ['?', '?'];
        $args = [$job['type'], $job['payload']];
        foreach (['key' => 'business_key', 'queue' => 'queue', 'dedupe' => 'dedupe', 'priority' => 'priority',
            'max_attempts' => 'max_attempts', 'partition' => 'partition_key'] as $opt => $col) {
            if (array_key_exists($opt, $o)) {
                $cols[] = $col;
                $vals[] = '?';
                $args[] = $o[$opt];
            }
        }
        if (isset($o['run_at'])) {
            $cols[] = 'next_run_at';
            $vals[] = '?';
            $args[] = $o['run_at']->format(match ($this->driver) {
                'mysql' => 'Y-m-d H:i:s.u',
                'pgsql' => 'Y-m-d H:i:s.uP',
                'sqlite' => 'Y-m-d H:i:s.v',
            });
        } elseif (isset($o['delay'])) {
            $cols[] = 'next_run_at';
            // The database's clock, which the workers compare next_run_at with.
            [$vals[], $args[]] = match ($this->driver) {
                'mysql' => ['UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND', (int) round($o['delay'] * 1e6)],
                'pgsql' => ["statement_timestamp() + ? * interval '1 microsecond'", (int) round($o['delay'] * 1e6)],
                'sqlite' => ["strftime('%Y-%m-%d %H:%M:%f', 'now', ?)", sprintf('+%.3F seconds', $o['delay'])],
            };
        }
        if (isset($o['deadline'])) {
            $cols[] = 'deadline';
            $vals[] = '?';
            $args[] = $o['deadline']->format(match ($this->driver) {
                'mysql' => 'Y-m-d H:i:s.u',
                'pgsql' => 'Y-m-d H:i:s.uP',
                'sqlite' => 'Y-m-d H:i:s.v',
            });
        }
        if (isset($o['progress_timeout'])) {
            // Microseconds, as the server stores a job's own timeout.
            $cols[] = 'progress_timeout_us';
            $vals[] = '?';
            $args[] = (int) round($o['progress_timeout'] * 1e6);
        }
        $insert = "INSERT INTO {$this->table} (" . implode(', ', $cols) . ') VALUES (' . implode(', ', $vals) . ')';
        $key = $o['key'] ?? null;

        if ($this->driver === 'mysql') {
            $st = $this->pdo->prepare($insert . ' ON DUPLICATE KEY UPDATE id = LAST_INSERT_ID(id)');
            $st->execute($args);
            // 1 row for an insert, 0 for the no-op update of the job holding the key.
            return new EnqueueResult((int) $this->pdo->lastInsertId(), $st->rowCount() !== 1);
        }
        // PostgreSQL and SQLite. A job holding the key under active dedupe
        // may finish between the two statements; the insert then succeeds
        // on the next turn.
        for ($turn = 0; ; $turn++) {
            $st = $this->pdo->prepare($insert . ' ON CONFLICT DO NOTHING RETURNING id');
            $st->execute($args);
            $id = $st->fetchColumn();
            $st->closeCursor();
            if ($id !== false) {
                return new EnqueueResult((int) $id, false);
            }
            $st = $this->pdo->prepare("SELECT id FROM {$this->table}
                WHERE business_key = ? AND (dedupe = 'permanent' OR status IN ('pending', 'processing'))");
            $st->execute([$key]);
            $id = $st->fetchColumn();
            $st->closeCursor();
            if ($id !== false) {
                return new EnqueueResult((int) $id, true);
            }
            if ($turn >= 3) {
                throw new \RuntimeException("enqueue {$job['type']}: key " . json_encode($key) . ' is taken, but no job holds it');
            }
        }
    }

    /**
     * Runs $fn with PDO in exception mode, whatever mode the app chose, so
     * that no failed statement passes unnoticed.
     *
     * @template T
     * @param callable():T $fn
     * @return T
     */
    private function withExceptions(callable $fn): mixed
    {
        $mode = $this->pdo->getAttribute(\PDO::ATTR_ERRMODE);
        if ($mode === \PDO::ERRMODE_EXCEPTION) {
            return $fn();
        }
        $this->pdo->setAttribute(\PDO::ATTR_ERRMODE, \PDO::ERRMODE_EXCEPTION);
        try {
            return $fn();
        } finally {
            $this->pdo->setAttribute(\PDO::ATTR_ERRMODE, $mode);
        }
    }
}
