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
        $this->assertSame(['ok' => true], $this->api->cancel($r->id));
        $this->assertSame('cancelled', $this->api->job($r->id)['status']);
        $this->api->retry($r->id);
        $this->assertSame('pending', $this->api->job($r->id)['status']);
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
