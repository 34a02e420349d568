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

    private static function sign(string $secret, int $t, string $body = self::BODY): string
    {
        return "t=$t,v1=" . hash_hmac('sha256', "$t.$body", $secret);
    }

    private static function headers(string $sig): array
    {
        return ['X-Sluice-Signature' => $sig, 'Idempotency-Key' => 'job-41-1700000000000000', 'X-Sluice-Key' => 'order:7',
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
    public static function badSignatures(): iterable
    {
        $now = time();
        yield 'missing' => [''];
        yield 'wrong secret' => [self::sign('other', $now)];
        yield 'another body' => [self::sign('s3cret', $now, '{"id":42}')];
        yield 'six minutes old' => [self::sign('s3cret', $now - 360)];
        yield 'six minutes ahead' => [self::sign('s3cret', $now + 360)];
        yield 'no v1' => ["t=$now"];
        yield 'no t' => ['v1=' . hash_hmac('sha256', "$now." . self::BODY, 's3cret')];
        yield 'a v0 only' => [str_replace('v1=', 'v0=', self::sign('s3cret', $now))];
    }

    /** @dataProvider badSignatures */
    public function testBadSignatureIsRefused(string $sig): void
    {
        $this->expectException(SignatureException::class);
        (new Receiver('s3cret'))->receive(self::BODY, self::headers($sig));
    }

    public function testRotation(): void
    {
        $now = time();
        // sluice signs with old and new secret while both are configured...
        $both = self::sign('new', $now) . ',v1=' . explode('v1=', self::sign('old', $now))[1];
        (new Receiver('new'))->verify(self::BODY, $both);
        (new Receiver('old'))->verify(self::BODY, $both);
        // ...and a receiver may accept either while it rotates.
        (new Receiver(['new', 'old']))->verify(self::BODY, self::sign('old', $now));
        $this->expectException(SignatureException::class);
        (new Receiver(['new', 'old']))->verify(self::BODY, self::sign('older', $now));
    }

    public function testReplayWindowIsConfigurable(): void
    {
        $r = new Receiver('s3cret', 60);
        $r->verify(self::BODY, self::sign('s3cret', 1000), 1059);
        $this->expectExceptionMessage('outside the 60s window');
        $r->verify(self::BODY, self::sign('s3cret', 1000), 1061);
    }

    public function testSignedGarbageIsNotAJob(): void
    {
        $body = '{"id":"x"}';
        $this->expectException(\UnexpectedValueException::class);
        $this->expectExceptionMessage('body: id: missing or of the wrong type');
        (new Receiver('s3cret'))->receive($body, ['X-Sluice-Signature' => self::sign('s3cret', time(), $body), 'Idempotency-Key' => 'job-1-1']);
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
        $d = (new Receiver('s3cret'))->receive(self::BODY, ['X-Sluice-Signature' => self::sign('s3cret', time()),
            'Idempotency-Key' => Db::key('job-41')]);
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
}
