<?php

declare(strict_types=1);

namespace Sluice\Tests;

use PHPUnit\Framework\TestCase;
use Sluice\Api;
use Sluice\ApiException;
use Sluice\ValidationException;

/** Sluice\Api against a real `sluice serve --no-workers` (php_test.go starts it). */
final class ApiTest extends TestCase
{
    private Api $api;

    protected function setUp(): void
    {
        $url = getenv('SLUICE_PHP_TEST_API');
        if ($url === false || $url === '') {
            $this->markTestSkipped('SLUICE_PHP_TEST_API is not set: run `go test ./clients/php`, which starts sluice serve for these tests');
        }
        $this->api = new Api($url, getenv('SLUICE_PHP_TEST_TOKEN'));
    }

    public function testEnqueueStatusCancelRetry(): void
    {
        $key = Db::key('api');
        $r = $this->api->enqueue('api_job', ['a' => 1], ['key' => $key, 'delay' => '1h', 'priority' => 2]);
        $this->assertFalse($r->duplicate);
        $again = $this->api->enqueue('api_job', ['a' => 2], ['key' => $key]);
        $this->assertTrue($again->duplicate);
        $this->assertSame($r->id, $again->id);

        $job = $this->api->job($r->id);
        $this->assertSame('pending', $job['status']);
        $this->assertSame($key, $job['key'] ?? $job['business_key'] ?? null);
        $this->assertSame([], $this->api->jobLogs($r->id), 'a job that has not run has no logs');
        $this->assertSame(['ok' => true], $this->api->cancel($r->id));
        $this->assertSame('cancelled', $this->api->job($r->id)['status']);
        $this->api->retry($r->id);
        $this->assertSame('pending', $this->api->job($r->id)['status']);
    }

    /**
     * A receiver reports progress with its attempt's token, not the API
     * token; another attempt's token is refused with 409.
     */
    public function testProgressWithTheAttemptsToken(): void
    {
        $pdo = Db::pdo($this);
        $r = $this->api->enqueue('api_job', ['a' => 2], ['key' => Db::key('api-progress'), 'delay' => '1h']);
        $leaseEnd = match ($pdo->getAttribute(\PDO::ATTR_DRIVER_NAME)) {
            'mysql' => 'UTC_TIMESTAMP(6) + INTERVAL 1 HOUR',
            'pgsql' => "now() + interval '1 hour'",
            default => "strftime('%Y-%m-%d %H:%M:%f', 'now', '+1 hour')",
        };
        $claim = $pdo->prepare('UPDATE ' . Db::table('jobs') . " SET status = 'processing', attempts = 1, locked_by = 'php-progress-lease', locked_until = $leaseEnd WHERE id = ?");
        $claim->execute([$r->id]);
        $this->assertSame(1, $claim->rowCount());

        $receiver = new Api(getenv('SLUICE_PHP_TEST_API'), null);
        $token = hash('sha256', 'php-progress-lease:' . $r->id);
        $this->assertSame(['written' => true], $receiver->progress($r->id, $token, 3, 10, 'rows'));
        $this->assertSame(['done' => 3, 'total' => 10, 'message' => 'rows'],
            array_intersect_key($this->api->job($r->id)['progress'], ['done' => 0, 'total' => 0, 'message' => 0]));
        try {
            $receiver->progress($r->id, hash('sha256', 'an-earlier-lease:' . $r->id), 4, 10);
            $this->fail('a stale attempt\'s token was accepted');
        } catch (ApiException $e) {
            $this->assertSame(409, $e->status);
        }
        $this->api->cancel($r->id);
    }

    /**
     * A running job (here: held by a worker's lease token written straight
     * into its row) is cancelled through the API: the attempt ends in its
     * history as cancelled by the token, and the worker's late success,
     * fenced by that token, changes nothing.
     */
    public function testCancelRunningJob(): void
    {
        $pdo = Db::pdo($this);
        $r = $this->api->enqueue('api_job', ['a' => 1], ['key' => Db::key('api-running'), 'delay' => '1h']);
        $leaseEnd = match ($pdo->getAttribute(\PDO::ATTR_DRIVER_NAME)) {
            'mysql' => 'UTC_TIMESTAMP(6) + INTERVAL 1 HOUR',
            'pgsql' => "now() + interval '1 hour'",
            default => "strftime('%Y-%m-%d %H:%M:%f', 'now', '+1 hour')",
        };
        $claim = $pdo->prepare('UPDATE ' . Db::table('jobs') . " SET status = 'processing', attempts = 1, locked_by = 'php-worker-token', locked_until = $leaseEnd WHERE id = ?");
        $claim->execute([$r->id]);
        $this->assertSame(1, $claim->rowCount());
        $this->assertSame('processing', $this->api->job($r->id)['status']);

        $this->assertSame(['ok' => true], $this->api->cancel($r->id));
        $job = $this->api->job($r->id);
        $this->assertSame('cancelled', $job['status']);
        $last = end($job['history']);
        $this->assertSame('cancelled', $last['outcome']);
        $this->assertStringStartsWith('cancelled by an operator: ', $last['error']);
        $this->assertStringContainsString(' via api', $last['error']);

        $late = $pdo->prepare('UPDATE ' . Db::table('jobs') . " SET status = 'success' WHERE id = ? AND locked_by = 'php-worker-token'");
        $late->execute([$r->id]);
        $this->assertSame(0, $late->rowCount(), 'the cancel let the stale token through');
        try {
            $this->api->cancel($r->id);
            $this->fail('a cancelled job was cancelled again');
        } catch (ApiException $e) {
            $this->assertSame(409, $e->status);
        }
    }

    public function testCronPass(): void
    {
        $pass = $this->api->run(['max_jobs' => 5, 'max_seconds' => 5]);
        $this->assertTrue($pass['ok']);
        $this->expectException(ValidationException::class);
        $this->expectExceptionMessage('maxjobs: unknown parameter');
        $this->api->run(['maxjobs' => 5]);
    }

    public function testErrors(): void
    {
        try {
            $this->api->job(987654321);
            $this->fail('a missing job was found');
        } catch (ApiException $e) {
            $this->assertSame(404, $e->status);
        }
        try {
            $this->api->jobLogs(987654321);
            $this->fail('a missing job\'s logs were found');
        } catch (ApiException $e) {
            $this->assertSame(404, $e->status);
        }
        try {
            (new Api(getenv('SLUICE_PHP_TEST_API'), 'not-the-token'))->job(1);
            $this->fail('a wrong token was accepted');
        } catch (ApiException $e) {
            $this->assertSame(403, $e->status);
            $this->assertStringContainsString('token not accepted', $e->getMessage());
        }
        try {
            (new Api(getenv('SLUICE_PHP_TEST_API')))->job(1);
            $this->fail('no token was accepted');
        } catch (ApiException $e) {
            $this->assertSame(401, $e->status);
        }
        try {
            $this->api->enqueue('api_job', [1, 2]);
            $this->fail('a list payload was sent');
        } catch (ValidationException $e) {
            $this->assertSame('payload', $e->field);
        }
        try {
            (new Api('http://127.0.0.1:1'))->job(1);
            $this->fail('nothing listens on port 1');
        } catch (ApiException $e) {
            $this->assertSame(0, $e->status);
        }
    }
}
