<?php

declare(strict_types=1);

namespace Sluice;

/**
 * The server's rules for one job (request.go and enqueue.go in sluice), so
 * that a job the server would refuse is refused here, before anything is
 * written, with the field the server would name. Lengths count characters,
 * as the database columns do. Only what the caller set is checked and
 * returned: a missing option is left to the database, where the type's
 * settings from sluice.yaml apply.
 *
 * @internal the public surface is Client::enqueue's options
 */
final class Rules
{
    public const MAX_TYPE = 64;
    public const MAX_QUEUE = 64;
    public const MAX_KEY = 191;
    public const MAX_PARTITION = 64;
    public const MIN_PRIORITY = -32768;
    public const MAX_PRIORITY = 32767;
    public const MAX_ATTEMPTS = 2147483647;
    /** The API's limit on a request body, which bounds the payload. */
    public const MAX_PAYLOAD_BYTES = 1 << 20;
    /** json_encode's depth: deeper payloads are refused, as on the server. */
    public const MAX_DEPTH = 64;

    private const OPTIONS = ['key', 'dedupe', 'queue', 'priority', 'run_at', 'delay', 'max_attempts', 'partition'];

    /**
     * Checks one job and returns it normalised: type, payload (JSON text)
     * and the options the caller set, run_at as a UTC DateTimeImmutable and
     * delay as seconds (float).
     *
     * @param array<string,mixed> $options
     * @return array{type:string,payload:string,options:array<string,mixed>}
     */
    public static function job(string $type, mixed $payload, array $options): array
    {
        foreach (array_keys($options) as $k) {
            if (!in_array($k, self::OPTIONS, true)) {
                throw new ValidationException((string) $k, 'unknown option; want one of ' . implode(', ', self::OPTIONS));
            }
        }
        self::name('type', $type, self::MAX_TYPE);
        $out = [];
        if (isset($options['key']) && $options['key'] !== '') {
            $out['key'] = self::text('key', $options['key'], self::MAX_KEY);
        }
        if (isset($options['queue'])) {
            $out['queue'] = self::name('queue', $options['queue'], self::MAX_QUEUE);
        }
        if (isset($options['dedupe'])) {
            if (!in_array($options['dedupe'], ['permanent', 'active'], true)) {
                throw new ValidationException('dedupe', self::show($options['dedupe']) . ': want permanent or active');
            }
            $out['dedupe'] = $options['dedupe'];
        }
        if (isset($options['priority'])) {
            $p = $options['priority'];
            if (!is_int($p) || $p < self::MIN_PRIORITY || $p > self::MAX_PRIORITY) {
                throw new ValidationException('priority', 'must be an integer between ' . self::MIN_PRIORITY . ' and ' . self::MAX_PRIORITY);
            }
            $out['priority'] = $p;
        }
        if (isset($options['max_attempts'])) {
            $m = $options['max_attempts'];
            if (!is_int($m) || $m < 1 || $m > self::MAX_ATTEMPTS) {
                throw new ValidationException('max_attempts', 'must be an integer between 1 and ' . self::MAX_ATTEMPTS);
            }
            $out['max_attempts'] = $m;
        }
        if (isset($options['partition']) && $options['partition'] !== '') {
            $p = $options['partition'];
            if (!is_string($p)) {
                throw new ValidationException('partition', 'must be a string');
            }
            if (strlen($p) > self::MAX_PARTITION) {
                throw new ValidationException('partition', strlen($p) . ' characters, at most ' . self::MAX_PARTITION . ' allowed');
            }
            if (preg_match('~[^A-Za-z0-9_.:@/-]~', $p, $m, PREG_OFFSET_CAPTURE)) {
                throw new ValidationException('partition', sprintf('character %s at byte %d: want ASCII letters, digits and _ - . : @ /', self::show($m[0][0]), $m[0][1]));
            }
            $out['partition'] = $p;
        }
        if (isset($options['run_at']) && isset($options['delay'])) {
            throw new ValidationException('run_at', 'give run_at or delay, not both');
        }
        if (isset($options['run_at'])) {
            $out['run_at'] = self::time('run_at', $options['run_at']);
        }
        if (isset($options['delay'])) {
            $out['delay'] = self::seconds('delay', $options['delay']);
        }
        return ['type' => $type, 'payload' => self::payload($payload), 'options' => $out];
    }

    /** A payload as stored: a JSON object ({} for an empty array). */
    public static function payload(mixed $payload): string
    {
        if ($payload === [] || $payload === null) {
            return '{}';
        }
        if (is_string($payload)) {
            // The classic slip: json_encode($data) passed where $data was meant.
            throw new ValidationException('payload', 'must be an array or object, not a string (pass the data, not its json_encode)');
        }
        if (is_array($payload) && array_is_list($payload)) {
            throw new ValidationException('payload', 'must be a JSON object: give an array with string keys, not a list');
        }
        if (!is_array($payload) && !is_object($payload)) {
            throw new ValidationException('payload', 'must be an array or object, not ' . get_debug_type($payload));
        }
        try {
            $json = json_encode($payload, JSON_THROW_ON_ERROR | JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES | JSON_PRESERVE_ZERO_FRACTION, self::MAX_DEPTH);
        } catch (\JsonException $e) {
            throw new ValidationException('payload', 'cannot encode as JSON: ' . $e->getMessage());
        }
        if ($json === '[]') {
            return '{}';
        }
        if ($json[0] !== '{') {
            throw new ValidationException('payload', 'must be a JSON object');
        }
        if (str_contains($json, '\u0000')) {
            // PostgreSQL's jsonb cannot store it, so no database may.
            throw new ValidationException('payload', 'contains a NUL character');
        }
        if (strlen($json) > self::MAX_PAYLOAD_BYTES) {
            throw new ValidationException('payload', strlen($json) . ' bytes of JSON, at most ' . self::MAX_PAYLOAD_BYTES . ' allowed');
        }
        return $json;
    }

    private static function name(string $field, mixed $v, int $max): string
    {
        if (!is_string($v) || $v === '') {
            throw new ValidationException($field, 'must not be empty');
        }
        return self::text($field, $v, $max);
    }

    private static function text(string $field, mixed $v, int $max): string
    {
        if (!is_string($v)) {
            throw new ValidationException($field, 'must be a string');
        }
        if (!preg_match('//u', $v)) {
            throw new ValidationException($field, 'not valid UTF-8');
        }
        $n = preg_match_all('/./su', $v);
        if ($n > $max) {
            throw new ValidationException($field, "$n characters, at most $max allowed");
        }
        if (str_contains($v, "\0")) {
            throw new ValidationException($field, 'contains a NUL byte');
        }
        return $v;
    }

    private static function time(string $field, mixed $v): \DateTimeImmutable
    {
        if (is_string($v)) {
            $t = \DateTimeImmutable::createFromFormat(\DateTimeInterface::RFC3339_EXTENDED, $v)
                ?: \DateTimeImmutable::createFromFormat(\DateTimeInterface::RFC3339, $v);
            if ($t === false) {
                throw new ValidationException($field, self::show($v) . ' is not an RFC 3339 time such as 2025-01-02T15:04:05Z');
            }
            $v = $t;
        }
        if (!$v instanceof \DateTimeInterface) {
            throw new ValidationException($field, 'want a DateTimeInterface or an RFC 3339 string');
        }
        return \DateTimeImmutable::createFromInterface($v)->setTimezone(new \DateTimeZone('UTC'));
    }

    private static function seconds(string $field, mixed $v): float
    {
        if ($v instanceof \DateInterval) {
            $now = new \DateTimeImmutable('@0');
            $end = $now->add($v);
            $v = (float) $end->format('U.u');
        }
        if (is_string($v)) {
            $v = self::duration($field, $v);
        }
        if (!is_int($v) && !is_float($v)) {
            throw new ValidationException($field, 'want seconds (int or float), a duration such as "30s", "2h" or "7d", or a DateInterval');
        }
        if ($v < 0 || !is_finite((float) $v)) {
            throw new ValidationException($field, 'must not be negative');
        }
        return (float) $v;
    }

    /** The API's duration syntax (Go's, plus d and w): "90s", "1h30m", "7d". */
    private static function duration(string $field, string $v): float
    {
        $units = ['ns' => 1e-9, 'us' => 1e-6, 'µs' => 1e-6, 'ms' => 1e-3, 's' => 1, 'm' => 60, 'h' => 3600, 'd' => 86400, 'w' => 604800];
        if (!preg_match('/^([-+]?)((?:[0-9]+(?:\.[0-9]*)?(?:ns|us|µs|ms|s|m|h|d|w))+|0)$/u', $v, $m)) {
            throw new ValidationException($field, self::show($v) . ': want a duration such as "30s", "2h" or "7d"');
        }
        preg_match_all('/([0-9]+(?:\.[0-9]*)?)(ns|us|µs|ms|s|m|h|d|w)/u', $m[2], $parts, PREG_SET_ORDER);
        $secs = 0.0;
        foreach ($parts as [, $n, $u]) {
            $secs += (float) $n * $units[$u];
        }
        return $m[1] === '-' ? -$secs : $secs;
    }

    private static function show(mixed $v): string
    {
        return is_string($v) ? json_encode($v, JSON_UNESCAPED_UNICODE | JSON_INVALID_UTF8_SUBSTITUTE) : get_debug_type($v);
    }
}
