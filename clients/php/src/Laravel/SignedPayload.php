<?php

declare(strict_types=1);

namespace Sluice\Laravel;

/**
 * The sluice payload of a Laravel job: Laravel's own job payload (JSON),
 * base64-encoded so that the serialized command's NUL bytes (protected and
 * private properties) survive sluice's payload rules, and signed with a key
 * derived from the app's APP_KEY:
 *
 *     {"displayName": "App\\Jobs\\SyncOrder", "laravel": "<base64>", "signature": "<hex HMAC-SHA256>"}
 *
 * Anyone who can enqueue a sluice job (an API token, `sluice enqueue`, an
 * INSERT) can write any payload; only the app can sign one. The webhook route
 * opens nothing it did not sign: the signature is checked, in constant time,
 * before the payload is decoded, a class resolved or a command unserialized.
 * displayName is for the dashboard only and never read back.
 */
final class SignedPayload
{
    public const HANDLER = 'Illuminate\Queue\CallQueuedHandler@call';

    /** Binds the key to this use: the same APP_KEY signs nothing else of sluice's or Laravel's. */
    private const CONTEXT = 'sluice-laravel-job-v1';

    /**
     * The signing keys: app.key first (it signs), then app.previous_keys
     * (they still verify, during an APP_KEY rotation).
     *
     * @param array<string,mixed> $appConfig config('app')
     * @return list<string>
     */
    public static function keys(array $appConfig): array
    {
        $keys = [];
        foreach (array_merge([$appConfig['key'] ?? null], (array) ($appConfig['previous_keys'] ?? [])) as $i => $k) {
            if (!is_string($k) || $k === '') {
                if ($i === 0) {
                    throw new \RuntimeException('app.key: not set (APP_KEY); sluice signs Laravel jobs with a key derived from it');
                }
                continue;
            }
            if (str_starts_with($k, 'base64:')) {
                $k = base64_decode(substr($k, 7), true);
                if ($k === false) {
                    throw new \RuntimeException('app.key: "base64:" followed by invalid base64');
                }
            }
            $keys[] = hash_hmac('sha256', self::CONTEXT, $k, true);
        }
        return $keys;
    }

    /**
     * @param string $laravelPayload Laravel's job payload, JSON
     * @param list<string> $keys from keys(); the first signs
     * @return array<string,string> the sluice payload
     */
    public static function seal(string $laravelPayload, array $keys): array
    {
        $decoded = json_decode($laravelPayload, true, 512, JSON_THROW_ON_ERROR);
        $b64 = base64_encode($laravelPayload);
        return [
            'displayName' => (string) ($decoded['displayName'] ?? ''),
            'laravel' => $b64,
            'signature' => hash_hmac('sha256', $b64, $keys[0]),
        ];
    }

    /** True for a payload of the older adapter: Laravel's payload as it is, unsigned. */
    public static function isUnsigned(array $payload): bool
    {
        return !array_key_exists('laravel', $payload) && !array_key_exists('signature', $payload);
    }

    /**
     * Verifies a sluice payload and returns Laravel's job payload, pinned to
     * CallQueuedHandler@call.
     *
     * @param array<string,mixed> $payload
     * @param list<string> $keys
     * @return array<string,mixed>
     * @throws \UnexpectedValueException naming the field that does not check out
     */
    public static function open(array $payload, array $keys): array
    {
        $b64 = $payload['laravel'] ?? null;
        $sig = $payload['signature'] ?? null;
        if (!is_string($b64) || $b64 === '') {
            throw new \UnexpectedValueException('payload.laravel: missing: not a job this app dispatched');
        }
        if (!is_string($sig) || $sig === '') {
            throw new \UnexpectedValueException('payload.signature: missing: not a job this app dispatched');
        }
        $ok = false;
        foreach ($keys as $key) {
            $ok = hash_equals(hash_hmac('sha256', $b64, $key), strtolower($sig)) || $ok;
        }
        if (!$ok) {
            throw new \UnexpectedValueException('payload.signature: mismatch: not signed with this app\'s APP_KEY');
        }
        $json = base64_decode($b64, true);
        $job = $json === false ? null : json_decode($json, true, 512);
        if (!is_array($job)) {
            throw new \UnexpectedValueException('payload.laravel: not base64 of a JSON object');
        }
        return self::pinned($job);
    }

    /**
     * A Laravel payload whose handler is CallQueuedHandler@call with a
     * serialized (or encrypted) command, the only kind this adapter runs.
     *
     * @param array<string,mixed> $job
     * @return array<string,mixed>
     * @throws \UnexpectedValueException
     */
    public static function pinned(array $job): array
    {
        if (($job['job'] ?? null) !== self::HANDLER) {
            throw new \UnexpectedValueException('payload.job: want ' . self::HANDLER . ' (queued job classes; string jobs are not run)');
        }
        if (!is_string($job['data']['command'] ?? null) || !is_string($job['data']['commandName'] ?? null)) {
            throw new \UnexpectedValueException('payload.data: want commandName and command strings');
        }
        return $job;
    }
}
