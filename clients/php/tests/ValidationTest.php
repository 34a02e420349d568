<?php

declare(strict_types=1);

namespace Sluice\Tests;

use PHPUnit\Framework\TestCase;
use Sluice\Rules;
use Sluice\ValidationException;

/**
 * The server's enqueue rules, applied before anything is written. The shared
 * cases in testdata/enqueue_rules.json are the ones the Go side checks
 * against the API, so the two cannot drift.
 */
final class ValidationTest extends TestCase
{
    private const RULES = __DIR__ . '/../../../testdata/enqueue_rules.json';

    public function testSharedRules(): void
    {
        if (!is_file(self::RULES)) {
            $this->markTestSkipped('testdata/enqueue_rules.json is not in this checkout');
        }
        $cases = json_decode((string) file_get_contents(self::RULES), false, 512, JSON_THROW_ON_ERROR);
        $ran = 0;
        foreach ($cases as $c) {
            $body = isset($c->request_raw_base64) ? base64_decode($c->request_raw_base64, true) : json_encode($c->request);
            // Decoded as objects, so that {} stays an object in the payload.
            $req = json_decode((string) $body, false, 512, JSON_INVALID_UTF8_IGNORE | JSON_BIGINT_AS_STRING);
            if (isset($c->request_raw_base64) && json_decode((string) $body) === null) {
                // Bytes PHP cannot hold as JSON reach the client as strings;
                // testInvalidUtf8 covers them.
                continue;
            }
            $opts = [];
            foreach ((array) $req as $k => $v) {
                if ($k !== 'type' && $k !== 'payload' && $v !== null) {
                    $opts[$k] = $v;
                }
            }
            $field = null;
            try {
                Rules::job(is_string($req->type ?? null) ? $req->type : '', $req->payload ?? null, $opts);
            } catch (ValidationException $e) {
                $field = $e->field;
            }
            if ($c->ok) {
                $this->assertNull($field, "{$c->name}: refused on $field");
            } else {
                $this->assertSame($c->field, $field, "{$c->name}: want a refusal naming {$c->field}");
            }
            $ran++;
        }
        $this->assertGreaterThan(0, $ran);
    }

    /** @return iterable<string,array{string,mixed,array<string,mixed>,?string}> */
    public static function cases(): iterable
    {
        yield 'minimal' => ['t', [], [], null];
        yield 'empty type' => ['', [], [], 'type'];
        yield '64-character type' => [str_repeat('t', 64), [], [], null];
        yield '65-character type' => [str_repeat('t', 65), [], [], 'type'];
        yield 'NUL in type' => ["a\0b", [], [], 'type'];
        yield '191 CJK characters in key' => ['t', [], ['key' => str_repeat('订', 191)], null];
        yield '192 characters in key' => ['t', [], ['key' => str_repeat('订', 192)], 'key'];
        yield 'NUL in key' => ['t', [], ['key' => "k\0"], 'key'];
        yield 'invalid UTF-8 key' => ['t', [], ['key' => "k\xff"], 'key'];
        yield 'invalid UTF-8 type' => ["t\xc3", [], [], 'type'];
        yield 'invalid UTF-8 in payload' => ['t', ['a' => "\xff"], [], 'payload'];
        yield 'NUL in payload' => ['t', ['a' => "x\0"], [], 'payload'];
        yield 'list payload' => ['t', [1, 2], [], 'payload'];
        yield 'string payload (double encoding)' => ['t', '{"a":1}', [], 'payload'];
        yield 'object payload' => ['t', (object) ['a' => (object) []], [], null];
        yield 'too deep payload' => ['t', self::nest(70), [], 'payload'];
        yield 'over 1 MiB payload' => ['t', ['a' => str_repeat('x', 1 << 20)], [], 'payload'];
        yield 'queue empty' => ['t', [], ['queue' => ''], 'queue'];
        yield 'queue 65' => ['t', [], ['queue' => str_repeat('q', 65)], 'queue'];
        yield 'priority range' => ['t', [], ['priority' => 32768], 'priority'];
        yield 'priority low end' => ['t', [], ['priority' => -32768], null];
        yield 'priority string' => ['t', [], ['priority' => '1'], 'priority'];
        yield 'max_attempts 0' => ['t', [], ['max_attempts' => 0], 'max_attempts'];
        yield 'max_attempts -1' => ['t', [], ['max_attempts' => -1], 'max_attempts'];
        yield 'max_attempts 1' => ['t', [], ['max_attempts' => 1], null];
        yield 'dedupe typo' => ['t', [], ['dedupe' => 'activ'], 'dedupe'];
        yield 'partition alphabet' => ['t', [], ['partition' => 'tenant 1'], 'partition'];
        yield 'partition ok' => ['t', [], ['partition' => 'acme.example/eu-1:x@y_z'], null];
        yield 'run_at and delay' => ['t', [], ['run_at' => '2030-01-01T00:00:00Z', 'delay' => 5], 'run_at'];
        yield 'run_at not RFC 3339' => ['t', [], ['run_at' => '2030-01-01 00:00'], 'run_at'];
        yield 'negative delay' => ['t', [], ['delay' => -1], 'delay'];
        yield 'negative delay string' => ['t', [], ['delay' => '-5s'], 'delay'];
        yield 'delay string' => ['t', [], ['delay' => '1h30m'], null];
        yield 'delay typo' => ['t', [], ['delay' => '10 minutes'], 'delay'];
        yield 'unknown option' => ['t', [], ['max_attempt' => 3], 'max_attempt'];
    }

    /** @dataProvider cases */
    public function testRule(string $type, mixed $payload, array $options, ?string $field): void
    {
        try {
            Rules::job($type, $payload, $options);
            $this->assertNull($field, "accepted; want a refusal naming $field");
        } catch (ValidationException $e) {
            $this->assertSame($field, $e->field, $e->getMessage());
            $this->assertStringStartsWith("$field: ", $e->getMessage());
        }
    }

    public function testDurations(): void
    {
        $this->assertSame(5400.0, Rules::job('t', [], ['delay' => '1h30m'])['options']['delay']);
        $this->assertSame(604800.0, Rules::job('t', [], ['delay' => '7d'])['options']['delay']);
        $this->assertSame(0.25, Rules::job('t', [], ['delay' => '250ms'])['options']['delay']);
        $this->assertSame(90.0, Rules::job('t', [], ['delay' => new \DateInterval('PT1M30S')])['options']['delay']);
    }

    private static function nest(int $depth): array
    {
        $v = ['leaf' => 1];
        for ($i = 1; $i < $depth; $i++) {
            $v = ['n' => $v];
        }
        return $v;
    }
}
