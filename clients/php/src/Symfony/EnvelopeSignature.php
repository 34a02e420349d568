<?php

declare(strict_types=1);

namespace Sluice\Symfony;

/**
 * The app's own signature on the envelopes its sluice transport writes.
 * Anyone who can enqueue a sluice job (an API token, `sluice enqueue`, an
 * INSERT) can write a payload; only the app knows this secret, so the
 * webhook route decodes (unserializes) nothing it did not sign itself.
 *
 * The MAC is HMAC-SHA256(secret, "sluice-messenger-v1" then the body and
 * each header, sorted by name, as <length>:<bytes>): the body and headers
 * are exactly what the serializer's decode() gets.
 */
final class EnvelopeSignature
{
    private const VERSION = 'v1';

    /** @var list<string> */
    private readonly array $secrets;

    /**
     * @param string|list<string> $secrets the first signs; any verifies (a rotation)
     * @param string $field the name the error messages give the secret
     */
    public function __construct(string|array|null $secrets, string $field = 'secret')
    {
        $secrets = array_values(array_filter((array) $secrets, fn ($s) => is_string($s) && $s !== ''));
        if ($secrets === []) {
            throw new \InvalidArgumentException("$field: want the secret that signs the envelopes the sluice transport writes "
                . '(the transport\'s `secret` option, typically %kernel.secret%); unsigned envelopes are never decoded');
        }
        $this->secrets = $secrets;
    }

    /** @param array<string,string> $headers */
    public function sign(string $body, array $headers): string
    {
        return self::VERSION . '=' . hash_hmac('sha256', self::message($body, $headers), $this->secrets[0]);
    }

    /**
     * Throws unless $payload is {"body", "headers"?, "signature"} signed by
     * one of the secrets, compared in constant time; returns the body and
     * headers to decode.
     *
     * @return array{body:string,headers:array<string,string>}
     * @throws \UnexpectedValueException naming the field at fault
     */
    public function verify(array $payload): array
    {
        $body = $payload['body'] ?? null;
        if (!is_string($body)) {
            throw new \UnexpectedValueException('payload.body: want the encoded envelope');
        }
        $headers = $payload['headers'] ?? [];
        if (!is_array($headers)) {
            throw new \UnexpectedValueException('payload.headers: want an object of strings');
        }
        foreach ($headers as $k => $v) {
            if (!is_string($v)) {
                throw new \UnexpectedValueException("payload.headers.$k: want a string");
            }
        }
        $sig = $payload['signature'] ?? null;
        if (!is_string($sig) || $sig === '') {
            throw new \UnexpectedValueException('payload.signature: missing: the envelope was not written by this app\'s '
                . 'sluice transport (or by a sluice/sluice older than its signing), so it is not decoded');
        }
        if (!str_starts_with($sig, self::VERSION . '=')) {
            throw new \UnexpectedValueException('payload.signature: unknown version; want ' . self::VERSION . '=<hex>');
        }
        $given = strtolower(substr($sig, strlen(self::VERSION) + 1));
        $message = self::message($body, $headers);
        $ok = false;
        foreach ($this->secrets as $secret) {
            // No early exit: the time taken says nothing about which secret matched.
            $ok = hash_equals(hash_hmac('sha256', $message, $secret), $given) || $ok;
        }
        if (!$ok) {
            throw new \UnexpectedValueException('payload.signature: mismatch: the envelope was not signed with the '
                . 'transport\'s secret, so it is not decoded');
        }
        return ['body' => $body, 'headers' => $headers];
    }

    /** @param array<string,string> $headers */
    private static function message(string $body, array $headers): string
    {
        ksort($headers, SORT_STRING);
        $m = 'sluice-messenger-' . self::VERSION . "\n" . strlen($body) . ':' . $body;
        foreach ($headers as $k => $v) {
            $m .= "\n" . strlen((string) $k) . ':' . $k . strlen($v) . ':' . $v;
        }
        return $m;
    }
}
