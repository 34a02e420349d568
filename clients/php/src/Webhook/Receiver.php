<?php

declare(strict_types=1);

namespace Sluice\Webhook;

/**
 * Checks and parses sluice's webhook requests. The signature this checks is
 * v2 of "t=<unix>,v1=...,v2=<hex HMAC-SHA256(secret, "<t>.<len(key)>:<key>.<body>")>",
 * key being the Idempotency-Key header: the key the receiver records
 * (Sluice\Idempotency) is signed too, so a captured delivery replayed under
 * another key is refused. Several v2 come while a secret rotates; any one
 * matching any configured secret is enough, compared in constant time, and
 * a t further than the tolerance from now is refused so that a captured
 * request cannot be replayed later.
 */
final class Receiver
{
    /** @var list<string> */
    private readonly array $secrets;

    /**
     * @param string|list<string> $secrets the type's http.secret; several during a rotation
     * @param int $toleranceSeconds the replay window
     */
    public function __construct(string|array $secrets, private readonly int $toleranceSeconds = 300)
    {
        $secrets = array_values(array_filter((array) $secrets, fn ($s) => is_string($s) && $s !== ''));
        if ($secrets === []) {
            throw new \InvalidArgumentException('secrets: want at least one non-empty webhook secret');
        }
        if ($toleranceSeconds < 1) {
            throw new \InvalidArgumentException('toleranceSeconds: must be at least 1');
        }
        $this->secrets = $secrets;
    }

    /**
     * @param string $key the request's Idempotency-Key header
     * @throws SignatureException
     */
    public function verify(string $body, ?string $header, string $key, ?int $now = null): void
    {
        if ($header === null || trim($header) === '') {
            throw new SignatureException('X-Sluice-Signature: missing');
        }
        $t = null;
        $sigs = [];
        foreach (explode(',', $header) as $part) {
            [$k, $v] = array_pad(explode('=', trim($part), 2), 2, '');
            if ($k === 't') {
                $t = $v;
            } elseif ($k === 'v2') {
                $sigs[] = strtolower($v);
            }
        }
        if ($t === null || !preg_match('/^[0-9]{1,19}$/', $t)) {
            throw new SignatureException('X-Sluice-Signature: bad or missing timestamp');
        }
        if ($sigs === []) {
            throw new SignatureException('X-Sluice-Signature: no v2 signature (v2 covers the Idempotency-Key; a sluice older than this library sends only v1: upgrade it)');
        }
        $age = ($now ?? time()) - (int) $t;
        if (abs($age) > $this->toleranceSeconds) {
            throw new SignatureException("X-Sluice-Signature: timestamp is {$age}s from now, outside the {$this->toleranceSeconds}s window");
        }
        $ok = false;
        foreach ($this->secrets as $secret) {
            $want = hash_hmac('sha256', $t . '.' . strlen($key) . ':' . $key . '.' . $body, $secret);
            foreach ($sigs as $sig) {
                // No early exit: the time taken says nothing about which matched.
                $ok = hash_equals($want, $sig) || $ok;
            }
        }
        if (!$ok) {
            throw new SignatureException('X-Sluice-Signature: mismatch');
        }
    }

    /**
     * Verifies and parses a request.
     *
     * @param array<string,string|list<string>> $headers any case
     * @throws SignatureException on a bad signature (answer 401)
     * @throws \UnexpectedValueException on a signed body that is not a sluice job (answer 422)
     */
    public function receive(string $body, array $headers, ?int $now = null): Delivery
    {
        $h = [];
        foreach ($headers as $name => $v) {
            $h[strtolower((string) $name)] = is_array($v) ? implode(',', $v) : (string) $v;
        }
        $idem = $h['idempotency-key'] ?? '';
        $this->verify($body, $h['x-sluice-signature'] ?? null, $idem, $now);
        try {
            $j = json_decode($body, true, 512, JSON_THROW_ON_ERROR);
        } catch (\JsonException $e) {
            throw new \UnexpectedValueException('body: not JSON: ' . $e->getMessage());
        }
        foreach (['id' => 'is_int', 'type' => 'is_string', 'attempt' => 'is_int', 'max_attempts' => 'is_int'] as $f => $is) {
            if (!is_array($j) || !$is($j[$f] ?? null)) {
                throw new \UnexpectedValueException("body: $f: missing or of the wrong type");
            }
        }
        $payload = $j['payload'] ?? [];
        if (!is_array($payload)) {
            throw new \UnexpectedValueException('body: payload: not a JSON object');
        }
        $key = $j['key'] ?? null;
        if ($idem === '') {
            throw new \UnexpectedValueException('Idempotency-Key: missing');
        }
        return new Delivery($j['id'], $j['type'], is_string($key) && $key !== '' ? $key : null, $j['attempt'],
            $j['max_attempts'], $payload, $idem, ($h['traceparent'] ?? '') ?: null, $body,
            ($h['x-sluice-progress-token'] ?? '') ?: null);
    }

    /**
     * Verifies and parses the request PHP is serving (PHP-FPM, php -S,
     * mod_php).
     *
     * @throws SignatureException
     * @throws \UnexpectedValueException
     */
    public function receiveGlobals(): Delivery
    {
        $headers = [];
        foreach ($_SERVER as $k => $v) {
            if (str_starts_with((string) $k, 'HTTP_')) {
                $headers[str_replace('_', '-', substr((string) $k, 5))] = (string) $v;
            }
        }
        return $this->receive((string) file_get_contents('php://input'), $headers);
    }
}
