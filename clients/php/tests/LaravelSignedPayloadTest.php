<?php

declare(strict_types=1);

namespace Sluice\Tests;

use PHPUnit\Framework\TestCase;
use Sluice\Laravel\SignedPayload;

/** The Laravel adapter's job envelope: what it signs, and what it refuses before decoding anything. */
final class LaravelSignedPayloadTest extends TestCase
{
    private const JOB = '{"uuid":"u","displayName":"App\\\\Jobs\\\\P","job":"Illuminate\\\\Queue\\\\CallQueuedHandler@call","maxTries":null,'
        . '"data":{"commandName":"App\\\\Jobs\\\\P","command":"O:11:\\"App\\\\Jobs\\\\P\\":1:{s:5:\\"\\u0000*\\u0000id\\";i:7;}"}}';

    private static function keys(string $key = 'base64:c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTA=', array $previous = []): array
    {
        return SignedPayload::keys(['key' => $key, 'previous_keys' => $previous]);
    }

    public function testSealedJobOpensIntactWithoutNul(): void
    {
        $sealed = SignedPayload::seal(self::JOB, self::keys());
        $json = json_encode($sealed, JSON_THROW_ON_ERROR);
        $this->assertStringNotContainsString('\u0000', $json, 'a NUL-free payload');
        $this->assertSame('App\Jobs\P', $sealed['displayName']);
        $job = SignedPayload::open(json_decode($json, true), self::keys());
        $this->assertSame("O:11:\"App\\Jobs\\P\":1:{s:5:\"\0*\0id\";i:7;}", $job['data']['command']);
    }

    public function testOtherKeyOrTamperedPayloadIsRefused(): void
    {
        $sealed = SignedPayload::seal(self::JOB, self::keys());
        foreach ([
            'another APP_KEY' => [$sealed, self::keys('another-key')],
            'payload changed' => [['laravel' => base64_encode(str_replace('i:7', 'i:8', self::JOB))] + $sealed, self::keys()],
            'signature changed' => [['signature' => str_repeat('0', 64)] + $sealed, self::keys()],
        ] as $case => [$payload, $keys]) {
            try {
                SignedPayload::open($payload, $keys);
                $this->fail("$case: opened");
            } catch (\UnexpectedValueException $e) {
                $this->assertStringContainsString('payload.signature: mismatch', $e->getMessage(), $case);
            }
        }
    }

    public function testPreviousKeyStillOpens(): void
    {
        $sealed = SignedPayload::seal(self::JOB, self::keys('old-key'));
        $this->assertSame('u', SignedPayload::open($sealed, self::keys('new-key', ['old-key']))['uuid']);
    }

    public function testOnlyCallQueuedHandlerRuns(): void
    {
        $other = str_replace('Illuminate\\\\Queue\\\\CallQueuedHandler@call', 'App\\\\Evil@run', self::JOB);
        $this->expectExceptionMessage('payload.job: want Illuminate\Queue\CallQueuedHandler@call');
        SignedPayload::open(SignedPayload::seal($other, self::keys()), self::keys());
    }

    public function testUnsetAppKeyIsAClearError(): void
    {
        $this->expectExceptionMessage('app.key: not set (APP_KEY)');
        SignedPayload::keys(['key' => '']);
    }

    public function testUnsignedPayloadIsRecognised(): void
    {
        $this->assertTrue(SignedPayload::isUnsigned(json_decode(self::JOB, true)));
        $this->assertFalse(SignedPayload::isUnsigned(SignedPayload::seal(self::JOB, self::keys())));
    }
}
