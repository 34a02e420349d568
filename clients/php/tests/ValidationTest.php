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

    /**
     * The shared cases a PHP caller cannot send, and why. Every case of the
     * file is run or named here (or in RAW_AS_PHP), so that a new one cannot
     * pass unnoticed.
     */
    private const NOT_FOR_PHP = [
        'repeated field' => 'a PHP array holds each key once: the second "type" replaces the first before the library is called',
        'repeated member in the payload' => 'a PHP array holds each key once: the second "a" replaces the first before the library is called',
        'payload not JSON' => 'the payload is a PHP value, and the library writes the text json_encode makes of it, which is valid JSON',
        'two values in the body' => 'the library takes one PHP array per job, never a request body',
        'body cut short' => 'the library takes one PHP array per job, never a request body',
    ];

    /**
     * The shared cases whose bytes json_decode cannot read, as a PHP caller
     * passes the same content: the invalid byte as it is, and a lone
     * surrogate as the three bytes that CESU-8 and WTF-8 encoders (the only
     * way one gets into a PHP string) make of it.
     */
    private const RAW_AS_PHP = [
        'raw 0xFF byte in the payload' => ['type' => 't', 'payload' => ['a' => "\xff"]],
        'raw 0xFF byte in the key' => ['type' => 't', 'key' => "a\xffb"],
        'lone high surrogate in the payload' => ['type' => 't', 'payload' => ['a' => "\xed\xa0\x80"]],
        'lone low surrogate in the key' => ['type' => 't', 'key' => "\xed\xb0\x80"],
    ];

    public function testSharedRules(): void
    {
        $this->assertFileExists(self::RULES);
        $cases = json_decode((string) file_get_contents(self::RULES), false, 512, JSON_THROW_ON_ERROR);
        $names = array_map(fn ($c) => $c->name, $cases);
        foreach (array_merge(array_keys(self::NOT_FOR_PHP), array_keys(self::RAW_AS_PHP)) as $n) {
            $this->assertContains($n, $names, 'a case named here is in the shared file');
        }
        $ran = 0;
        foreach ($cases as $c) {
            if (isset(self::NOT_FOR_PHP[$c->name])) {
                continue;
            }
            if (isset(self::RAW_AS_PHP[$c->name])) {
                $job = self::RAW_AS_PHP[$c->name];
            } else {
                $body = isset($c->request_raw_base64) ? base64_decode($c->request_raw_base64, true) : json_encode($c->request);
                // Decoded as objects, so that {} stays an object in the payload.
                $job = json_decode((string) $body, false, 512);
                $this->assertSame(JSON_ERROR_NONE, json_last_error(), "{$c->name}: PHP cannot read it: name it in NOT_FOR_PHP or RAW_AS_PHP");
                if ($job instanceof \stdClass) {
                    $job = get_object_vars($job);
                }
            }
            $refusal = null;
            try {
                Rules::request($job);
            } catch (ValidationException $e) {
                $refusal = $e;
            }
            if ($c->ok) {
                $this->assertNull($refusal, "{$c->name}: refused: " . $refusal?->getMessage());
            } else {
                $this->assertNotNull($refusal, "{$c->name}: accepted; want a refusal naming {$c->field}");
                $this->assertSame($c->field, $refusal->field, "{$c->name}: " . $refusal->getMessage());
                $this->assertStringStartsWith("{$c->field}: ", $refusal->getMessage(), $c->name);
                $this->assertStringContainsString($c->message ?? '', $refusal->getMessage(), $c->name);
            }
            $ran++;
        }
        $this->assertSame(count($cases) - count(self::NOT_FOR_PHP), $ran);
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
        yield 'invalid UTF-8 in payload' => ['t', ['a' => "\xff"], [], 'payload.a'];
        yield 'invalid UTF-8 in a member name' => ['t', ['a' => ['b' => ["\xff" => 1]]], [], 'payload.a.b'];
        yield 'NUL in payload' => ['t', ['a' => "x\0"], [], 'payload.a'];
        yield 'NUL in an object property' => ['t', (object) ['a' => [1, (object) ['b' => "\0"]]], [], 'payload.a[1].b'];
        yield 'INF in payload' => ['t', ['n' => [INF]], [], 'payload.n[0]'];
        yield 'NAN in payload' => ['t', ['n' => NAN], [], 'payload.n'];
        yield 'JsonSerializable payload' => ['t', new class () implements \JsonSerializable {
            public function jsonSerialize(): mixed
            {
                return ['a' => 1];
            }
        }, [], null];
        yield 'JsonSerializable payload that is a list' => ['t', new class () implements \JsonSerializable {
            public function jsonSerialize(): mixed
            {
                return [1];
            }
        }, [], 'payload'];
        yield 'list payload' => ['t', [1, 2], [], 'payload'];
        yield 'string payload (double encoding)' => ['t', '{"a":1}', [], 'payload'];
        yield 'object payload' => ['t', (object) ['a' => (object) []], [], null];
        yield 'too deep payload' => ['t', self::nest(70), [], 'payload'];
        yield 'over 1 MiB payload' => ['t', ['a' => str_repeat('x', 1 << 20)], [], 'payload'];
        yield 'queue empty is the type\'s' => ['t', [], ['queue' => ''], null];
        yield 'dedupe empty is the type\'s' => ['t', [], ['dedupe' => ''], null];
        yield 'type as an option' => ['t', [], ['type' => 'u'], 'type'];
        yield 'queue 65' => ['t', [], ['queue' => str_repeat('q', 65)], 'queue'];
        yield 'priority range' => ['t', [], ['priority' => 32768], 'priority'];
        yield 'priority low end' => ['t', [], ['priority' => -32768], null];
        yield 'priority string' => ['t', [], ['priority' => '1'], 'priority'];
        yield 'max_attempts 0 is the type\'s' => ['t', [], ['max_attempts' => 0], null];
        yield 'max_attempts as float' => ['t', [], ['max_attempts' => 3.0], 'max_attempts'];
        yield 'max_attempts -1' => ['t', [], ['max_attempts' => -1], 'max_attempts'];
        yield 'max_attempts 1' => ['t', [], ['max_attempts' => 1], null];
        yield 'dedupe typo' => ['t', [], ['dedupe' => 'activ'], 'dedupe'];
        yield 'partition alphabet' => ['t', [], ['partition' => 'tenant 1'], 'partition'];
        yield 'partition ok' => ['t', [], ['partition' => 'acme.example/eu-1:x@y_z'], null];
        yield 'run_at and delay' => ['t', [], ['run_at' => '2030-01-01T00:00:00Z', 'delay' => 5], 'run_at'];
        yield 'run_at not RFC 3339' => ['t', [], ['run_at' => '2030-01-01 00:00'], 'run_at'];
        yield 'run_at not a day' => ['t', [], ['run_at' => '2030-02-30T00:00:00Z'], 'run_at'];
        yield 'run_at with nanoseconds' => ['t', [], ['run_at' => '2030-01-01T00:00:00.123456789+02:00'], null];
        yield 'run_at past the last microsecond' => ['t', [], ['run_at' => '9999-12-31T23:59:59.9999991Z'], 'run_at'];
        yield 'run_at offset past year 9999' => ['t', [], ['run_at' => '9999-12-31T23:30:00-01:00'], 'run_at'];
        yield 'run_at DateTime before 1970' => ['t', [], ['run_at' => new \DateTimeImmutable('1969-12-31T23:59:59Z')], 'run_at'];
        yield 'run_at DateTime' => ['t', [], ['run_at' => new \DateTimeImmutable('2030-01-01T00:00:00+05:00')], null];
        yield 'negative delay' => ['t', [], ['delay' => -1], 'delay'];
        yield 'negative delay string' => ['t', [], ['delay' => '-5s'], 'delay'];
        yield 'delay string' => ['t', [], ['delay' => '1h30m'], null];
        yield 'delay typo' => ['t', [], ['delay' => '10 minutes'], 'delay'];
        yield 'delay days with hours' => ['t', [], ['delay' => '1d12h'], 'delay'];
        yield 'delay without a unit' => ['t', [], ['delay' => '5'], 'delay'];
        yield 'delay fraction of a week' => ['t', [], ['delay' => '1.5w'], null];
        yield 'delay seconds too long' => ['t', [], ['delay' => 1e10], 'delay'];
        yield 'delay hours too long' => ['t', [], ['delay' => '3000000h'], 'delay'];
        yield 'delay NAN' => ['t', [], ['delay' => NAN], 'delay'];
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
