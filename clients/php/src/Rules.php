<?php

declare(strict_types=1);

namespace Sluice;

/**
 * The server's rules for one job (request.go and enqueue.go in sluice), so
 * that a job the server would refuse is refused here, before anything is
 * written, with the field the server would name. The shared cases in
 * testdata/enqueue_rules.json hold both sides to the same answers, and
 * clients/php/rules_test.go holds these limits to the Go constants.
 *
 * As on the server, an option's zero value ('' or 0, as JSON's absent
 * field decodes) means "not set": it is left to the database, where the
 * type's settings from sluice.yaml apply. Lengths count characters, as the
 * database columns do.
 *
 * What the server checks in the bytes of a request, PHP sees as values:
 * - invalid UTF-8 and lone UTF-16 surrogates: a PHP string holds bytes, so
 *   each string is checked for valid UTF-8, and a surrogate (which only an
 *   encoder's mistake, CESU-8 or WTF-8, puts in a PHP string as ED A0..BF)
 *   is named as such;
 * - a number beyond a 64-bit float (1e1000000): in PHP it is INF or NAN;
 * - a member name given twice, or JSON text that is not valid: a PHP array
 *   cannot hold either, and json_encode writes only valid text;
 * - the payload's size: the bytes of the JSON text this library writes
 *   (json_encode with JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES),
 *   which is what the server would store for it.
 *
 * @internal the public surface is Client::enqueue's options
 */
final class Rules
{
    /** driver.MaxTypeLen, MaxQueueLen, MaxKeyLen, MaxPartitionLen. */
    public const MAX_TYPE = 64;
    public const MAX_QUEUE = 64;
    public const MAX_KEY = 191;
    public const MAX_PARTITION = 64;
    /** sluice.MinPriority and MaxPriority: a SMALLINT column. */
    public const MIN_PRIORITY = -32768;
    public const MAX_PRIORITY = 32767;
    /** sluice.MaxMaxAttempts: a 32-bit INTEGER column. */
    public const MAX_ATTEMPTS = 2147483647;
    /** sluice.MaxPayloadBytes: the payload's JSON text. */
    public const MAX_PAYLOAD_BYTES = 1 << 20;
    /** sluice.MaxPayloadDepth: objects and arrays, the payload itself counting as one. */
    public const MAX_PAYLOAD_DEPTH = 31;
    /** sluice's minRunAt and maxRunAt, as RFC 3339 in UTC. */
    public const MIN_RUN_AT = '1970-01-01T00:00:00Z';
    public const MAX_RUN_AT = '9999-12-31T23:59:59.999999Z';

    /** The fields of a job request (sluice.EnqueueRequest's JSON names), type and payload first. */
    public const FIELDS = ['type', 'payload', 'key', 'dedupe', 'queue', 'priority', 'run_at', 'delay', 'deadline', 'progress_timeout', 'max_attempts', 'partition'];

    /** Go's time.Duration ends at 2^63-1 nanoseconds. */
    private const MAX_DELAY_SECONDS = 9223372036.854775807;

    /**
     * Checks one job shaped like the body of POST /v1/jobs (an array of the
     * FIELDS) and returns it normalised as job() does.
     *
     * @return array{type:string,payload:string,options:array<string,mixed>}
     */
    public static function request(mixed $job): array
    {
        if (!is_array($job) || ($job !== [] && array_is_list($job))) {
            throw new ValidationException('body', 'must be a JSON object: an array with string keys, not ' . self::kind($job));
        }
        self::known($job);
        $type = $job['type'] ?? null;
        $payload = $job['payload'] ?? null;
        unset($job['type'], $job['payload']);
        return self::job($type, $payload, $job);
    }

    /**
     * Checks one job and returns it normalised: type, payload (JSON text)
     * and the options the caller set, run_at and deadline as UTC
     * DateTimeImmutables, delay and progress_timeout as seconds (float).
     *
     * @param array<string,mixed> $options
     * @return array{type:string,payload:string,options:array<string,mixed>}
     */
    public static function job(mixed $type, mixed $payload, array $options): array
    {
        self::known($options);
        foreach (['type', 'payload'] as $k) {
            if (array_key_exists($k, $options)) {
                throw new ValidationException($k, 'is an argument of its own, not an option');
            }
        }
        $type = self::name('type', $type ?? '', self::MAX_TYPE);
        // Options at their zero value are not set, as on the server.
        $options = array_filter($options, fn ($v) => $v !== null && $v !== '' && $v !== 0);
        $out = [];
        if (isset($options['max_attempts'])) {
            $out['max_attempts'] = self::integer('max_attempts', $options['max_attempts'], 1, self::MAX_ATTEMPTS, ", or 0 for the type's default");
        }
        if (isset($options['priority'])) {
            $out['priority'] = self::integer('priority', $options['priority'], self::MIN_PRIORITY, self::MAX_PRIORITY, '');
        }
        if (isset($options['dedupe'])) {
            if (!in_array($options['dedupe'], ['permanent', 'active'], true)) {
                throw new ValidationException('dedupe', self::show($options['dedupe']) . ': want permanent or active');
            }
            $out['dedupe'] = $options['dedupe'];
        }
        if (isset($options['run_at'])) {
            $out['run_at'] = self::time('run_at', $options['run_at']);
        }
        if (isset($options['delay'])) {
            $out['delay'] = self::seconds('delay', $options['delay']);
        }
        if (isset($out['run_at'], $out['delay'])) {
            throw new ValidationException('run_at', 'give run_at or delay, not both');
        }
        if (isset($options['deadline'])) {
            $out['deadline'] = self::deadline($options['deadline'], $out['run_at'] ?? null, $out['delay'] ?? 0.0);
        }
        if (isset($options['progress_timeout'])) {
            $out['progress_timeout'] = self::timeout('progress_timeout', $options['progress_timeout']);
        }
        if (isset($options['key'])) {
            $out['key'] = self::text('key', $options['key'], self::MAX_KEY);
        }
        if (isset($options['queue'])) {
            $out['queue'] = self::name('queue', $options['queue'], self::MAX_QUEUE);
        }
        if (isset($options['partition'])) {
            $out['partition'] = self::partition($options['partition']);
        }
        return ['type' => $type, 'payload' => self::payload($payload), 'options' => $out];
    }

    /** A payload as stored: a JSON object ({} for null or an empty array). */
    public static function payload(mixed $payload): string
    {
        if ($payload === [] || $payload === null) {
            return '{}';
        }
        if (is_string($payload)) {
            // The classic slip: json_encode($data) passed where $data was meant.
            $s = trim($payload);
            if (($s !== '' && ($s[0] === '{' || $s[0] === '[')) && (json_decode($s) !== null || json_last_error() === JSON_ERROR_NONE)) {
                throw new ValidationException('payload', 'a JSON string that holds JSON: it looks double-encoded; pass the data itself, not its json_encode');
            }
            throw new ValidationException('payload', 'must be a JSON object, got a string');
        }
        if (!is_array($payload) && !is_object($payload)) {
            throw new ValidationException('payload', 'must be a JSON object, got ' . self::kind($payload));
        }
        if (is_array($payload) && array_is_list($payload)) {
            throw new ValidationException('payload', 'must be a JSON object, got an array (a list): give an array with string keys');
        }
        try {
            $json = json_encode($payload, JSON_THROW_ON_ERROR | JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES | JSON_PRESERVE_ZERO_FRACTION, self::MAX_PAYLOAD_DEPTH);
        } catch (\JsonException $e) {
            if ($e->getCode() === JSON_ERROR_DEPTH) {
                throw new ValidationException('payload', 'nested deeper than ' . self::MAX_PAYLOAD_DEPTH . ' levels of objects and arrays');
            }
            // json_encode does not say where: find the value that stopped it.
            self::locate($payload, 'payload');
            throw new ValidationException('payload', 'cannot encode as JSON: ' . $e->getMessage());
        }
        if ($json === '[]') {
            return '{}';
        }
        if ($json[0] !== '{') {
            // A JsonSerializable that returned something other than an object.
            throw new ValidationException('payload', 'must be a JSON object, got ' . self::kind(json_decode($json)));
        }
        if (strlen($json) > self::MAX_PAYLOAD_BYTES) {
            throw new ValidationException('payload', strlen($json) . ' bytes, at most ' . self::MAX_PAYLOAD_BYTES . ' allowed');
        }
        if (str_contains($json, '\u0000')) {
            // PostgreSQL's jsonb cannot store it, so no database may.
            self::nul(json_decode($json, true, self::MAX_PAYLOAD_DEPTH + 1), 'payload');
        }
        return $json;
    }

    /** @param array<mixed> $fields */
    private static function known(array $fields): void
    {
        foreach (array_keys($fields) as $k) {
            if (!in_array($k, self::FIELDS, true)) {
                throw new ValidationException((string) $k, 'unknown field (field names are case-sensitive); want one of ' . implode(', ', self::FIELDS));
            }
        }
    }

    /**
     * Finds what json_encode refused in a payload (invalid UTF-8, INF or
     * NAN), walking it as json_encode does, and throws naming its place.
     */
    private static function locate(mixed $v, string $at): void
    {
        if ($v instanceof \JsonSerializable) {
            $v = $v->jsonSerialize();
        } elseif (is_object($v)) {
            $v = get_object_vars($v);
        }
        if (is_string($v) && ($p = self::utf8Problem($v)) !== null) {
            throw new ValidationException($at, "a value is $p");
        }
        if (is_float($v) && !is_finite($v)) {
            throw new ValidationException($at, "the number $v is out of range: want one a 64-bit float holds");
        }
        if (is_array($v)) {
            foreach ($v as $k => $item) {
                if (is_string($k) && ($p = self::utf8Problem($k)) !== null) {
                    throw new ValidationException($at, "a member name is $p");
                }
                self::locate($item, self::member($at, $k));
            }
        }
    }

    /**
     * Throws naming the first string with a NUL character in a decoded
     * payload: a value at its own place, a member name at its object's.
     */
    private static function nul(mixed $v, string $at): void
    {
        if (is_string($v) && str_contains($v, "\0")) {
            throw new ValidationException($at, 'a value contains a NUL character (\u0000), which PostgreSQL cannot store');
        }
        if (is_array($v)) {
            foreach ($v as $k => $item) {
                if (is_string($k) && str_contains($k, "\0")) {
                    throw new ValidationException($at, 'a member name contains a NUL character (\u0000), which PostgreSQL cannot store');
                }
                self::nul($item, self::member($at, $k));
            }
        }
    }

    /**
     * The field of a payload member, as the server names it: an index for a
     * name that is a number ("payload.a[0]"), whether it came from a list
     * or an object, as a JSON pointer does not tell them apart.
     */
    private static function member(string $at, int|string $k): string
    {
        $s = (string) $k;
        if (preg_match('/^(0|[1-9][0-9]*)$/', $s) && strlen($s) <= 10 && (int) $s < 2147483648) {
            return "{$at}[$s]";
        }
        return "$at.$s";
    }

    private static function name(string $field, mixed $v, int $max): string
    {
        if ($v === '') {
            throw new ValidationException($field, 'must not be empty');
        }
        return self::text($field, $v, $max);
    }

    private static function text(string $field, mixed $v, int $max): string
    {
        if (!is_string($v)) {
            throw new ValidationException($field, 'want a string, got ' . self::kind($v));
        }
        if (($p = self::utf8Problem($v)) !== null) {
            throw new ValidationException($field, $p);
        }
        $n = mb_strlen($v, 'UTF-8');
        if ($n > $max) {
            throw new ValidationException($field, "$n characters, at most $max allowed");
        }
        if (str_contains($v, "\0")) {
            throw new ValidationException($field, 'contains a NUL character');
        }
        return $v;
    }

    /** null for valid UTF-8, else what is wrong, naming an encoded surrogate. */
    private static function utf8Problem(string $v): ?string
    {
        if (preg_match('//u', $v)) {
            return null;
        }
        if (preg_match('/\xED[\xA0-\xBF][\x80-\xBF]/', $v)) {
            return 'not valid UTF-8: it holds a UTF-16 surrogate (U+D800 to U+DFFF), which has no UTF-8 form';
        }
        return 'not valid UTF-8';
    }

    private static function partition(mixed $p): string
    {
        if (!is_string($p)) {
            throw new ValidationException('partition', 'want a string, got ' . self::kind($p));
        }
        if (strlen($p) > self::MAX_PARTITION) {
            throw new ValidationException('partition', strlen($p) . ' characters, at most ' . self::MAX_PARTITION . ' allowed');
        }
        if (preg_match('~[^A-Za-z0-9_.:@/-]~', $p, $m, PREG_OFFSET_CAPTURE)) {
            throw new ValidationException('partition', sprintf('character %s at byte %d: want ASCII letters, digits and _ - . : @ /', self::show($m[0][0]), $m[0][1]));
        }
        return $p;
    }

    private static function integer(string $field, mixed $v, int $min, int $max, string $also): int
    {
        if (!is_int($v)) {
            throw new ValidationException($field, 'want an integer, got ' . self::kind($v));
        }
        if ($v < $min || $v > $max) {
            throw new ValidationException($field, "$v is out of range: want $min to $max$also");
        }
        return $v;
    }

    /**
     * run_at: a DateTimeInterface, or text in Go's time.RFC3339Nano as the
     * server parses it (fractional seconds optional, Z or an offset).
     */
    private static function time(string $field, mixed $v): \DateTimeImmutable
    {
        if (is_string($v)) {
            if (!preg_match('/^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-](\d{2}):(\d{2}))$/', $v, $m)
                || !checkdate((int) $m[2], (int) $m[3], (int) $m[1]) || $m[4] > 23 || $m[5] > 59 || $m[6] > 59
                || (isset($m[9]) && ($m[9] > 23 || $m[10] > 59))) {
                throw new ValidationException($field, self::show($v) . ' is not an RFC 3339 time such as 2025-01-02T15:04:05Z');
            }
            // PHP keeps microseconds: a finer fraction only matters at the
            // last allowed microsecond, where the server refuses it.
            $finer = trim(substr($m[7], 6), '0') !== '';
            $v = new \DateTimeImmutable(sprintf('%s-%s-%sT%s:%s:%s.%s%s', $m[1], $m[2], $m[3], $m[4], $m[5], $m[6],
                substr(str_pad($m[7], 6, '0'), 0, 6), $m[8] === 'Z' ? '+00:00' : $m[8]));
        }
        if (!$v instanceof \DateTimeInterface) {
            throw new ValidationException($field, 'want a DateTimeInterface or an RFC 3339 string');
        }
        $t = \DateTimeImmutable::createFromInterface($v)->setTimezone(new \DateTimeZone('UTC'));
        $max = new \DateTimeImmutable(self::MAX_RUN_AT);
        if ($t < new \DateTimeImmutable(self::MIN_RUN_AT) || $t > $max || ($t == $max && ($finer ?? false))) {
            throw new ValidationException($field, $t->format('Y-m-d\TH:i:s.uP') . ' is out of range: want ' . self::MIN_RUN_AT . ' to 9999-12-31T23:59:59Z');
        }
        return $t;
    }

    /**
     * deadline: a time as run_at, in the future and after the job is due
     * (its run_at, or now plus its delay) by this process's clock, as the
     * server checks it with its own: a job that could never start is
     * refused.
     */
    private static function deadline(mixed $v, ?\DateTimeImmutable $runAt, float $delay): \DateTimeImmutable
    {
        $t = self::time('deadline', $v);
        $now = new \DateTimeImmutable('now', new \DateTimeZone('UTC'));
        $due = $runAt ?? $now->modify(sprintf('+%d seconds', (int) ceil($delay)));
        $show = $t->format('Y-m-d\TH:i:s.uP');
        if ($t <= $now) {
            throw new ValidationException('deadline', "$show is in the past: the job could never start");
        }
        if ($t <= $due) {
            throw new ValidationException('deadline', "$show is not after the job is due (" . $due->format('Y-m-d\TH:i:s.uP') . '): it could never start');
        }
        return $t;
    }

    /**
     * progress_timeout: a duration as delay takes it, which must be
     * positive (the server's checkProgressTimeout): zero would read as
     * the type's.
     */
    private static function timeout(string $field, mixed $v): float
    {
        $given = $v;
        if (is_string($v)) {
            $v = self::duration($field, $v);
        }
        if ((is_int($v) || is_float($v)) && !is_nan((float) $v) && $v <= 0) {
            throw new ValidationException($field, 'must be positive, got ' . self::show($given));
        }
        return self::seconds($field, $v);
    }

    private static function seconds(string $field, mixed $v): float
    {
        if ($v instanceof \DateInterval) {
            $end = (new \DateTimeImmutable('@0'))->add($v);
            $v = (float) $end->format('U.u');
        }
        if (is_string($v)) {
            $v = self::duration($field, $v);
        }
        if (!is_int($v) && !is_float($v)) {
            throw new ValidationException($field, 'want seconds (int or float), a duration such as "30s", "2h" or "7d", or a DateInterval');
        }
        if (is_nan((float) $v)) {
            throw new ValidationException($field, 'NAN is not a number of seconds');
        }
        if ($v < 0) {
            throw new ValidationException($field, 'must not be negative');
        }
        if ($v >= self::MAX_DELAY_SECONDS) {
            throw new ValidationException($field, "$v seconds is too long: at most 2562047h");
        }
        return (float) $v;
    }

    /**
     * The API's duration syntax, as internal/dur.Parse reads it: one number
     * with d or w ("7d", "1.5w"), or Go's time.ParseDuration ("90s",
     * "1h30m", "-5s"; a sign, then numbers each with a unit; "0" alone).
     */
    private static function duration(string $field, string $v): float
    {
        $s = trim($v, " \t\n\r\v\f");
        $invalid = new ValidationException($field, 'invalid duration ' . self::show($v) . ': use a number with a unit: ms, s, m, h, d or w');
        if (preg_match('/^(.*)([dw])$/s', $s, $m)) {
            if (!preg_match('/^\+?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/', $m[1])) {
                throw $invalid;
            }
            return (float) $m[1] * ($m[2] === 'd' ? 86400 : 604800);
        }
        $units = ['ns' => 1e-9, 'us' => 1e-6, "\u{b5}s" => 1e-6, "\u{3bc}s" => 1e-6, 'ms' => 1e-3, 's' => 1, 'm' => 60, 'h' => 3600];
        if ($s === '0' || $s === '+0' || $s === '-0') {
            return 0.0;
        }
        if (!preg_match('/^([-+]?)((?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)[^0-9.]+)+)$/u', $s, $m)) {
            throw $invalid;
        }
        preg_match_all('/([0-9]+\.?[0-9]*|\.[0-9]+)([^0-9.]+)/u', $m[2], $parts, PREG_SET_ORDER);
        $secs = 0.0;
        foreach ($parts as [, $n, $u]) {
            if (!isset($units[$u])) {
                throw $invalid;
            }
            $secs += (float) $n * $units[$u];
        }
        if ($secs >= self::MAX_DELAY_SECONDS) {
            throw new ValidationException($field, self::show($v) . ' is too long: at most 2562047h');
        }
        return $m[1] === '-' ? -$secs : $secs;
    }

    /** What a value is, in the server's words for JSON ("a string", "an array"). */
    private static function kind(mixed $v): string
    {
        return match (true) {
            $v === null => 'null',
            is_bool($v) => 'a boolean',
            is_int($v), is_float($v) => 'a number',
            is_string($v) => 'a string',
            is_array($v) => array_is_list($v) && $v !== [] ? 'an array' : 'an object',
            default => get_debug_type($v),
        };
    }

    private static function show(mixed $v): string
    {
        return is_string($v) ? json_encode($v, JSON_UNESCAPED_UNICODE | JSON_INVALID_UTF8_SUBSTITUTE) : get_debug_type($v);
    }
}
