<?php

declare(strict_types=1);

namespace Sluice\Tests;

use PHPUnit\Framework\TestCase;
use Sluice\Idempotency;
use Sluice\Webhook\Receiver;
use Sluice\Webhook\Reply;
use Sluice\Webhook\SignatureException;

final class WebhookTest extends TestCase
{
    private const BODY = '{"id":41,"type":"order_sync","key":"order:7","attempt":2,"max_attempts":8,"payload":{"order_id":7}}';

    private const KEY = 'job-41-1700000000000000';

    /** What sluice sends (handler/webhook.SignKey): v1 over the body, v2 over the Idempotency-Key and the body. */
    private static function sign(string $secret, int $t, string $body = self::BODY, string $key = self::KEY): string
    {
        return "t=$t,v1=" . hash_hmac('sha256', "$t.$body", $secret)
            . ',v2=' . hash_hmac('sha256', "$t." . strlen($key) . ":$key.$body", $secret);
    }

    private static function headers(string $sig, string $key = self::KEY): array
    {
        return ['X-Sluice-Signature' => $sig, 'Idempotency-Key' => $key, 'X-Sluice-Key' => 'order:7',
            'traceparent' => '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'];
    }

    public function testGoodSignatureGivesTheJob(): void
    {
        $d = (new Receiver('s3cret'))->receive(self::BODY, self::headers(self::sign('s3cret', time())));
        $this->assertSame(41, $d->id);
        $this->assertSame('order_sync', $d->type);
        $this->assertSame('order:7', $d->key);
        $this->assertSame(2, $d->attempt);
        $this->assertSame(8, $d->maxAttempts);
        $this->assertSame(['order_id' => 7], $d->payload);
        $this->assertSame('job-41-1700000000000000', $d->idempotencyKey);
        $this->assertSame('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', $d->traceparent);
        $this->assertFalse($d->isLastAttempt());
    }

    /** @return iterable<string,array{string}> */
    /**
     * Each case signs at the test's own time, given as $now: PHPUnit runs
     * data providers when the suite starts, and a signature made then for
     * "six minutes ahead" was only four and a half ahead by the time a
     * loaded CI machine reached its test.
     */
    public static function badSignatures(): iterable
    {
        yield 'missing' => [fn (int $now) => ''];
        yield 'wrong secret' => [fn (int $now) => self::sign('other', $now)];
        yield 'another body' => [fn (int $now) => self::sign('s3cret', $now, '{"id":42}')];
        yield 'six minutes old' => [fn (int $now) => self::sign('s3cret', $now - 360)];
        yield 'six minutes ahead' => [fn (int $now) => self::sign('s3cret', $now + 360)];
        yield 'no v1 or v2' => [fn (int $now) => "t=$now"];
        yield 'no t' => [fn (int $now) => explode(',', self::sign('s3cret', $now), 2)[1]];
        yield 'a v0 only' => [fn (int $now) => "t=$now,v0=" . explode(',v2=', self::sign('s3cret', $now))[1]];
        // v1 covers the body, not the Idempotency-Key the receiver records.
        yield 'v1 only' => [fn (int $now) => explode(',v2=', self::sign('s3cret', $now))[0]];
        yield 'signed for another key' => [fn (int $now) => self::sign('s3cret', $now, self::BODY, 'job-41-1700000000000001')];
    }

    public function testReplayUnderAnotherKeyIsRefused(): void
    {
        // A captured delivery, replayed inside the window with a changed
        // Idempotency-Key, would be applied again by a receiver keyed on it.
        $sig = self::sign('s3cret', time());
        (new Receiver('s3cret'))->receive(self::BODY, self::headers($sig));
        $this->expectException(SignatureException::class);
        $this->expectExceptionMessage('mismatch');
        (new Receiver('s3cret'))->receive(self::BODY, self::headers($sig, 'job-41-1700000000000000-replayed'));
    }

    /** @dataProvider badSignatures */
    public function testBadSignatureIsRefused(\Closure $sign): void
    {
        $sig = $sign(time());
        $this->expectException(SignatureException::class);
        (new Receiver('s3cret'))->receive(self::BODY, self::headers($sig));
    }

    public function testRotation(): void
    {
        $now = time();
        // sluice signs with old and new secret while both are configured...
        $both = self::sign('new', $now) . ',v2=' . explode('v2=', self::sign('old', $now))[1];
        (new Receiver('new'))->verify(self::BODY, $both, self::KEY);
        (new Receiver('old'))->verify(self::BODY, $both, self::KEY);
        // ...and a receiver may accept either while it rotates.
        (new Receiver(['new', 'old']))->verify(self::BODY, self::sign('old', $now), self::KEY);
        $this->expectException(SignatureException::class);
        (new Receiver(['new', 'old']))->verify(self::BODY, self::sign('older', $now), self::KEY);
    }

    public function testReplayWindowIsConfigurable(): void
    {
        $r = new Receiver('s3cret', 60);
        $r->verify(self::BODY, self::sign('s3cret', 1000), self::KEY, 1059);
        $this->expectExceptionMessage('outside the 60s window');
        $r->verify(self::BODY, self::sign('s3cret', 1000), self::KEY, 1061);
    }

    public function testSignedGarbageIsNotAJob(): void
    {
        $body = '{"id":"x"}';
        $this->expectException(\UnexpectedValueException::class);
        $this->expectExceptionMessage('body: id: missing or of the wrong type');
        (new Receiver('s3cret'))->receive($body, ['X-Sluice-Signature' => self::sign('s3cret', time(), $body, 'job-1-1'), 'Idempotency-Key' => 'job-1-1']);
    }

    public function testReplies(): void
    {
        $this->assertSame(200, Reply::done(['ok' => true])->status);
        $r = Reply::retry('busy', 30);
        $this->assertSame(503, $r->status);
        $this->assertSame('30', $r->headers['Retry-After']);
        $this->assertArrayNotHasKey('Retry-After', Reply::retry('busy')->headers);
        $this->assertSame(422, Reply::fail('no such order')->status);
        $this->assertSame(401, Reply::unauthorized('bad signature')->status);
        $this->expectException(\InvalidArgumentException::class);
        Reply::fail('would be retried', 429);
    }

    public function testIdempotencyAppliesEachJobOnce(): void
    {
        $pdo = Db::pdo($this);
        $table = Db::table('applied');
        $idem = new Idempotency($pdo, $table);
        $idem->createTable();
        $idem->createTable(); // twice is harmless
        $d = self::delivery();
        $pdo->exec("CREATE TABLE {$table}_effects (n INTEGER)");
        $effect = fn (\PDO $p) => $p->exec("INSERT INTO {$table}_effects (n) VALUES (1)");

        try {
            $idem->once($d, function (\PDO $p) use ($effect) {
                $effect($p);
                throw new \RuntimeException('the effect failed');
            });
            $this->fail('the exception was swallowed');
        } catch (\RuntimeException $e) {
            $this->assertSame('the effect failed', $e->getMessage());
        }
        $this->assertFalse($pdo->inTransaction());
        $this->assertSame(0, (int) $pdo->query("SELECT COUNT(*) FROM {$table}_effects")->fetchColumn(), 'rolled back with its key');

        $this->assertTrue($idem->once($d, $effect));
        $this->assertFalse($idem->once($d, $effect), 'a redelivery applies nothing');
        $this->assertSame(1, (int) $pdo->query("SELECT COUNT(*) FROM {$table}_effects")->fetchColumn());
        $pdo->exec("DROP TABLE {$table}_effects");
    }

    /** A delivery with a key no other test run uses. */
    private static function delivery(): \Sluice\Webhook\Delivery
    {
        $key = Db::key('job-41');
        return (new Receiver('s3cret'))->receive(self::BODY, self::headers(self::sign('s3cret', time(), self::BODY, $key), $key));
    }

    public function testEachScopeOfADeliveryIsAppliedOnce(): void
    {
        // Two handlers of one delivery (two effects of one message): each
        // names its effect, so the second is not taken for a redelivery.
        $pdo = Db::pdo($this);
        $idem = new Idempotency($pdo, Db::table('applied'));
        $idem->createTable();
        $d = self::delivery();
        $ran = [];
        $this->assertTrue($idem->once($d, function () use (&$ran) { $ran[] = 'mail'; }, 'mail'));
        $this->assertTrue($idem->once($d, function () use (&$ran) { $ran[] = 'invoice'; }, 'invoice'));
        $this->assertFalse($idem->once($d, function () use (&$ran) { $ran[] = 'mail again'; }, 'mail'));
        $this->assertTrue($idem->once($d, function () use (&$ran) { $ran[] = 'unscoped'; }), 'the unscoped call keys on the job, as before');
        $this->assertFalse($idem->once($d, function () use (&$ran) { $ran[] = 'unscoped again'; }));
        $this->assertSame(['mail', 'invoice', 'unscoped'], $ran);
        foreach (['', str_repeat('x', 201), "a\0b"] as $bad) {
            try {
                $idem->once($d, fn () => null, $bad);
                $this->fail('scope ' . json_encode($bad) . ' was taken');
            } catch (\Sluice\ValidationException $e) {
                $this->assertSame('scope', $e->field);
            }
        }
    }

    public function testRedeliveryIsSeenOnAMysqlPdoThatCountsFoundRows(): void
    {
        $pdo = Db::pdo($this);
        if ($pdo->getAttribute(\PDO::ATTR_DRIVER_NAME) !== 'mysql') {
            $this->markTestSkipped('PDO::MYSQL_ATTR_FOUND_ROWS is MySQL\'s');
        }
        // The same database, opened as some apps (and ORMs) do.
        $found = new \PDO(getenv('SLUICE_PHP_TEST_DSN'), getenv('SLUICE_PHP_TEST_USER') ?: null, getenv('SLUICE_PHP_TEST_PASSWORD') ?: null,
            [\PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION, \PDO::MYSQL_ATTR_FOUND_ROWS => true]);
        $idem = new Idempotency($found, Db::table('applied'));
        $idem->createTable();
        $d = self::delivery();
        $n = 0;
        $this->assertTrue($idem->once($d, function () use (&$n) { $n++; }));
        $this->assertFalse($idem->once($d, function () use (&$n) { $n++; }), 'a redelivery applies nothing');
        $this->assertSame(1, $n);
    }
}
