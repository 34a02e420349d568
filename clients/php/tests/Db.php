<?php

declare(strict_types=1);

namespace Sluice\Tests;

use PHPUnit\Framework\TestCase;

/** The database a Go test migrated with the real sluice binary. */
final class Db
{
    public static function pdo(TestCase $t): \PDO
    {
        $dsn = getenv('SLUICE_PHP_TEST_DSN');
        if ($dsn === false || $dsn === '') {
            $t->markTestSkipped('SLUICE_PHP_TEST_DSN is not set: run `go test ./clients/php`, which migrates a database for these tests');
        }
        $pdo = new \PDO($dsn, getenv('SLUICE_PHP_TEST_USER') ?: null, getenv('SLUICE_PHP_TEST_PASSWORD') ?: null, [
            \PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION,
        ]);
        // A test that fails inside a transaction must not leave the next
        // ones waiting on its locks for long.
        match ($pdo->getAttribute(\PDO::ATTR_DRIVER_NAME)) {
            'mysql' => $pdo->exec('SET SESSION innodb_lock_wait_timeout = 5'),
            'pgsql' => $pdo->exec("SET lock_timeout = '5s'"),
            default => null,
        };
        return $pdo;
    }

    public static function table(string $name): string
    {
        return (getenv('SLUICE_PREFIX') ?: 'sluice_') . $name;
    }

    /** @return array<string,mixed> */
    public static function job(\PDO $pdo, int $id): array
    {
        $st = $pdo->prepare('SELECT * FROM ' . self::table('jobs') . ' WHERE id = ?');
        $st->execute([$id]);
        $row = $st->fetch(\PDO::FETCH_ASSOC);
        if ($row === false) {
            throw new \RuntimeException("job $id: not found");
        }
        return $row;
    }

    public static function count(\PDO $pdo, string $where = '1=1', array $args = []): int
    {
        $st = $pdo->prepare('SELECT COUNT(*) FROM ' . self::table('jobs') . " WHERE $where");
        $st->execute($args);
        return (int) $st->fetchColumn();
    }

    /** A key no other test run uses. */
    public static function key(string $what): string
    {
        return $what . ':' . bin2hex(random_bytes(6));
    }
}
