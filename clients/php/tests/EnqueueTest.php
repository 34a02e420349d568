<?php

declare(strict_types=1);

namespace Sluice\Tests;

use PHPUnit\Framework\TestCase;
use Sluice\Client;
use Sluice\ValidationException;

final class EnqueueTest extends TestCase
{
    private \PDO $pdo;
    private Client $client;

    protected function setUp(): void
    {
        $this->pdo = Db::pdo($this);
        $this->client = new Client($this->pdo);
    }

    protected function tearDown(): void
    {
        // A failed assertion inside a transaction leaves it open: end it, so
        // that its locks do not hold up the tests that follow.
        if (isset($this->pdo) && $this->pdo->inTransaction()) {
            $this->pdo->rollBack();
        }
        unset($this->pdo, $this->client);
    }

    public function testNewJobThenTakenKeyReturnsTheSameJob(): void
    {
        $key = Db::key('order');
        $a = $this->client->enqueue('order_sync', ['order_id' => 7], ['key' => $key]);
        $this->assertFalse($a->duplicate);
        $this->assertGreaterThan(0, $a->id);
        $b = $this->client->enqueue('order_sync', ['order_id' => 8], ['key' => $key]);
        $this->assertTrue($b->duplicate);
        $this->assertSame($a->id, $b->id);
        $row = Db::job($this->pdo, $a->id);
        $this->assertSame('order_sync', $row['type']);
        $this->assertSame($key, $row['business_key']);
        $this->assertSame(['order_id' => 7], json_decode($row['payload'], true), 'the first payload stays');
        $this->assertSame('pending', $row['status']);
    }

    public function testWithoutKeyEveryEnqueueIsANewJob(): void
    {
        $a = $this->client->enqueue('report');
        $b = $this->client->enqueue('report');
        $this->assertNotSame($a->id, $b->id);
        $this->assertFalse($b->duplicate);
        $this->assertSame('{}', str_replace(' ', '', Db::job($this->pdo, $a->id)['payload']));
    }

    public function testTakenKeyKeepsTheCallersTransactionUsable(): void
    {
        $key = Db::key('order');
        $first = $this->client->enqueue('order_sync', ['n' => 1], ['key' => $key]);
        $this->pdo->beginTransaction();
        $again = $this->client->enqueue('order_sync', ['n' => 2], ['key' => $key]);
        $this->assertTrue($again->duplicate);
        // The transaction goes on: on PostgreSQL a failed statement would
        // have aborted it and this insert would fail.
        $other = $this->client->enqueue('order_sync', ['n' => 3], ['key' => Db::key('order')]);
        $this->pdo->commit();
        $this->assertSame($first->id, $again->id);
        $this->assertSame('pending', Db::job($this->pdo, $other->id)['status']);
    }

    public function testRolledBackEnqueueLeavesNoJob(): void
    {
        $key = Db::key('order');
        $this->pdo->beginTransaction();
        $r = $this->client->enqueue('order_sync', [], ['key' => $key]);
        $this->client->enqueue('order_sync', [], ['key' => $key]);
        $this->pdo->rollBack();
        $this->assertSame(0, Db::count($this->pdo, 'business_key = ?', [$key]));
        $this->assertSame(0, Db::count($this->pdo, 'id = ?', [$r->id]));
        // The key is free again.
        $this->assertFalse($this->client->enqueue('order_sync', [], ['key' => $key])->duplicate);
    }

    public function testActiveDedupeFreesTheKeyWhenTheJobFinishes(): void
    {
        $key = Db::key('cust');
        $a = $this->client->enqueue('notify', [], ['key' => $key, 'dedupe' => 'active']);
        $this->assertTrue($this->client->enqueue('notify', [], ['key' => $key, 'dedupe' => 'active'])->duplicate);
        $this->pdo->prepare('UPDATE ' . Db::table('jobs') . " SET status = 'success', finished_at = next_run_at WHERE id = ?")->execute([$a->id]);
        $b = $this->client->enqueue('notify', [], ['key' => $key, 'dedupe' => 'active']);
        $this->assertFalse($b->duplicate);
        $this->assertNotSame($a->id, $b->id);
    }

    public function testOptionsAreWritten(): void
    {
        $r = $this->client->enqueue('mail', ['to' => 'a@example.com', 'name' => '张三'], [
            'key' => Db::key('mail'), 'queue' => 'mail', 'priority' => -3, 'max_attempts' => 2,
            'dedupe' => 'active', 'partition' => 'tenant:42',
            'run_at' => new \DateTimeImmutable('2031-02-03 04:05:06.789', new \DateTimeZone('Asia/Shanghai')),
        ]);
        $row = Db::job($this->pdo, $r->id);
        $this->assertSame('mail', $row['queue']);
        $this->assertSame(-3, (int) $row['priority']);
        $this->assertSame(2, (int) $row['max_attempts']);
        $this->assertSame('active', $row['dedupe']);
        $this->assertSame('tenant:42', $row['partition_key']);
        $this->assertSame(['to' => 'a@example.com', 'name' => '张三'], json_decode($row['payload'], true));
        // 04:05:06.789 in Shanghai is 20:05:06.789 UTC the day before.
        $this->assertStringStartsWith('2031-02-02 20:05:06.789', $this->utc($row['next_run_at']));
    }

    public function testDelayCountsFromTheDatabaseClock(): void
    {
        $r = $this->client->enqueue('report', [], ['delay' => 3600]);
        $this->assertSame(0, Db::count($this->pdo, 'id = ? AND next_run_at <= ' . $this->now(), [$r->id]), 'not runnable now');
        $soon = $this->client->enqueue('report', [], ['delay' => new \DateInterval('PT0S')]);
        $this->assertSame(1, Db::count($this->pdo, 'id = ? AND next_run_at <= ' . $this->now(), [$soon->id]));
        $row = Db::job($this->pdo, $r->id);
        $at = new \DateTimeImmutable($this->utc($row['next_run_at']), new \DateTimeZone('UTC'));
        $this->assertEqualsWithDelta(time() + 3600, $at->getTimestamp(), 60);
    }

    public function testOmittedOptionsAreLeftToTheDatabase(): void
    {
        $r = $this->client->enqueue('plain');
        $row = Db::job($this->pdo, $r->id);
        // Whatever the columns' defaults (or sluice's per-type settings)
        // give: the client wrote none of them.
        foreach (['queue', 'max_attempts', 'dedupe', 'priority', 'partition_key'] as $col) {
            $this->assertSame((string) $this->columnDefault($col), (string) $row[$col], $col);
        }
    }

    public function testEnqueueManyIsAllOrNothing(): void
    {
        $k1 = Db::key('m');
        $k2 = Db::key('m');
        $rs = $this->client->enqueueMany([
            ['type' => 'order_sync', 'payload' => ['n' => 1], 'key' => $k1],
            ['type' => 'order_sync', 'payload' => ['n' => 2], 'key' => $k2],
            ['type' => 'order_sync', 'payload' => ['n' => 3], 'key' => $k1],
        ]);
        $this->assertCount(3, $rs);
        $this->assertFalse($rs[0]->duplicate);
        $this->assertFalse($rs[1]->duplicate);
        $this->assertTrue($rs[2]->duplicate);
        $this->assertSame($rs[0]->id, $rs[2]->id);

        $k3 = Db::key('m');
        try {
            $this->client->enqueueMany([
                ['type' => 'order_sync', 'key' => $k3],
                ['type' => 'order_sync', 'key' => str_repeat('k', 192)],
            ]);
            $this->fail('an over-long key was accepted');
        } catch (ValidationException $e) {
            $this->assertSame('jobs[1].key', $e->field);
            $this->assertSame('jobs[1].key: 192 characters, at most 191 allowed', $e->getMessage());
        }
        $this->assertSame(0, Db::count($this->pdo, 'business_key = ?', [$k3]));
    }

    public function testEnqueueManyFailingInTheDatabaseLeavesTheCallersTransactionAsItWas(): void
    {
        // A constraint the client does not know makes the database refuse
        // the batch's second row after its first was written.
        $t = Db::table('jobs');
        $this->pdo->exec(match ($this->driver()) {
            'sqlite' => "CREATE TRIGGER php_probe BEFORE INSERT ON $t WHEN NEW.queue = 'refused' BEGIN SELECT RAISE(ABORT, 'queue refused'); END",
            default => "ALTER TABLE $t ADD CONSTRAINT php_probe CHECK (queue <> 'refused')",
        });
        try {
            $before = Db::key('before');
            $mid = Db::key('mid');
            $this->pdo->beginTransaction();
            $kept = $this->client->enqueue('order_sync', [], ['key' => $before]);
            try {
                $this->client->enqueueMany([
                    ['type' => 'order_sync', 'key' => $mid],
                    ['type' => 'order_sync', 'queue' => 'refused'],
                ]);
                $this->fail('the database accepted a refused row');
            } catch (\PDOException $e) {
            }
            // The caller's transaction goes on, without the batch.
            $this->assertSame(0, Db::count($this->pdo, 'business_key = ?', [$mid]));
            $after = $this->client->enqueue('order_sync', [], ['key' => Db::key('after')]);
            $this->pdo->commit();
            $this->assertSame('pending', Db::job($this->pdo, $kept->id)['status']);
            $this->assertSame('pending', Db::job($this->pdo, $after->id)['status']);
            $this->assertSame(0, Db::count($this->pdo, 'business_key = ?', [$mid]));
        } finally {
            if ($this->pdo->inTransaction()) {
                $this->pdo->rollBack();
            }
            $this->pdo->exec(match ($this->driver()) {
                'sqlite' => 'DROP TRIGGER php_probe',
                'mysql' => "ALTER TABLE $t DROP CONSTRAINT php_probe",
                'pgsql' => "ALTER TABLE $t DROP CONSTRAINT php_probe",
            });
        }
    }

    public function testSilentErrorModeStillThrows(): void
    {
        $this->pdo->setAttribute(\PDO::ATTR_ERRMODE, \PDO::ERRMODE_SILENT);
        $c = new Client($this->pdo, ['prefix' => 'no_such_prefix_']);
        try {
            $c->enqueue('x');
            $this->fail('an insert into a missing table passed');
        } catch (\PDOException $e) {
            $this->assertStringContainsString('no_such_prefix_jobs', $e->getMessage());
        }
        $this->assertSame(\PDO::ERRMODE_SILENT, $this->pdo->getAttribute(\PDO::ATTR_ERRMODE), 'the app\'s mode is restored');
    }

    public function testUnknownDriverAndOptionsAreRefused(): void
    {
        $this->expectException(ValidationException::class);
        $this->expectExceptionMessage('tabel_prefix: unknown option; want prefix');
        new Client($this->pdo, ['tabel_prefix' => 'x']);
    }

    private function driver(): string
    {
        return $this->pdo->getAttribute(\PDO::ATTR_DRIVER_NAME);
    }

    private function now(): string
    {
        return match ($this->driver()) {
            'mysql' => 'UTC_TIMESTAMP(6)',
            'pgsql' => 'now()',
            'sqlite' => "strftime('%Y-%m-%d %H:%M:%f', 'now')",
        };
    }

    /** A stored time as UTC "Y-m-d H:i:s.uuu". */
    private function utc(string $v): string
    {
        if ($this->driver() !== 'pgsql') {
            return $v;
        }
        return (new \DateTimeImmutable($v))->setTimezone(new \DateTimeZone('UTC'))->format('Y-m-d H:i:s.u');
    }

    private function columnDefault(string $col): mixed
    {
        // A row inserted with no values but the type shows the defaults the
        // database applies, whichever way it applies them.
        $t = Db::table('jobs');
        $this->pdo->beginTransaction();
        $this->pdo->exec("INSERT INTO $t (type) VALUES ('plain')");
        $st = $this->pdo->query("SELECT $col FROM $t WHERE type = 'plain' ORDER BY id DESC LIMIT 1");
        $v = $st->fetchColumn();
        $this->pdo->rollBack();
        return $v;
    }
}
